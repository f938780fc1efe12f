"""Spec 004 §13.2 step 4, the skill discovery prefetch: which skills the latest tool results call
for, and which were offered already (through the CLI: tests/cli/test_skill_discovery_cli.py)."""

from pathlib import Path

from codeloop.loop.skill_prefetch import already_offered, discovery_message, relevant
from codeloop.messages import Message
from codeloop.tools.skills import Skill, SkillSource


def skill(name, description):
    return Skill(name, description, Path(f"/s/{name}/SKILL.md"), SkillSource.USER)


def test_matching_rules():
    pdf = skill("pdf-forms", "Fill in PDF form fields, checkboxes and signatures.")
    k8s = skill("kube-deploy", "Roll out services to a Kubernetes cluster with helm charts and rollbacks.")
    db = skill("migrations", "Write database schema migrations with alembic.")
    # every word of the name, or enough shared words of the description
    assert relevant([pdf, k8s, db], "the PDF forms are attached", set()) == [pdf]
    assert relevant([pdf, k8s, db], "helm: kubernetes cluster unreachable; rollbacks failed", set()) == [k8s]
    assert relevant([pdf, k8s, db], "a pdf file", set()) == []                 # one name word is not enough
    assert relevant([pdf, k8s, db], "the PDF forms are attached", {"pdf-forms"}) == []   # offered already
    # best first: a name match before description matches, at most three
    many = [skill(f"s{i}", "alpha bravo charlie delta echo") for i in range(5)]
    found = relevant([*many, pdf], "pdf forms alpha bravo charlie delta", set())
    assert found[0] is pdf and len(found) == 3


def test_already_offered_reads_attachments_and_loaded_skills():
    history = [discovery_message([skill("pdf-forms", "x")]),
               Message("assistant", [{"type": "tool_use", "id": "t", "name": "Skill", "input": {"skill": "/commit"}}])]
    assert already_offered(history) == {"pdf-forms", "commit"}
