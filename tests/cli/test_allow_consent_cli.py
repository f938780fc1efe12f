"""Issue 25, item 9 through the real CLI: an explicit allow rule is consent, git reads ask only
where configuration names a program.

Print mode, the fake API scripting one Bash call per turn, commands running on real files: every
ordinary write command an allow rule names runs inside the project; the same commands aimed
outside it, at protected paths, at ask paths or at Read-denied paths are refused (print mode
refuses what would ask); a redirect or a chained command is judged on its own.
"""

import json
import subprocess

import pytest
from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop

RULES = ["Bash(mkdir:*)", "Bash(touch:*)", "Bash(cp:*)", "Bash(mv:*)", "Bash(rm:*)", "Bash(sed:*)", "Bash(tee:*)",
         "Bash(git add:*)", "Bash(git commit:*)", "Bash(python3:*)", "Bash(echo:*)"]


@pytest.fixture
def project(tmp_path):
    """A git repository in tmp_path/proj (identity in its own config), a home folder beside it."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "home").mkdir()
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    for key, value in (("user.name", "T"), ("user.email", "t@example.com"), ("commit.gpgsign", "false")):
        subprocess.run(["git", "-C", str(proj), "config", key, value], check=True)
    (proj / "data.txt").write_text("old\n")
    (proj / "secret.txt").write_text("KEY=1\n")
    (proj / "make_file.py").write_text("open('from_script.txt', 'w').write('made')\n")
    (tmp_path / "victim.txt").write_text("keep\n")
    return proj


def run(project, commands, *extra, rules=RULES):
    """Run each command as one Bash call; (json result, tool results by id)."""
    calls = [(f"c{i}", c) for i, c in enumerate(commands)]
    api = ScriptedAPI(*[sse(tool_use("Bash", {"command": c}, id=i)) for i, c in calls], sse(text("done")))
    env = {"HOME": str(project.parent / "home"), "GIT_CONFIG_NOSYSTEM": "1"}
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json", "--allowedTools", *rules, *extra], cwd=project,
                     base_url=url, env=env)
    assert r.returncode == 0, r.stderr
    results = {}
    for req in api.requests[1:]:
        block = req.messages[-1]["content"][-1]
        results[block["tool_use_id"]] = block["content"] if isinstance(block["content"], str) else \
            " ".join(b.get("text", "") for b in block["content"])
    denied = {d["tool_use_id"] for d in json.loads(r.stdout)["permission_denials"]}
    return denied, {c: results[i] for i, c in calls}, {c: i in denied for i, c in calls}


ALLOWED = ["mkdir build", "mkdir -p a/b/c", "touch notes.txt", "cp notes.txt copy.txt", "mv copy.txt moved.txt",
           "rm moved.txt", "sed -i s/old/new/ data.txt", "echo hi | tee out.txt", "git add data.txt",
           "git commit -qm first", "python3 -c \"open('py.txt', 'w').write('x')\"", "python3 make_file.py",
           "git log --oneline", "git diff HEAD", "git status --short", "git show --stat HEAD", "git blame data.txt"]


def test_commands_an_allow_rule_names_write_inside_the_project(project):
    denied, results, _ = run(project, ALLOWED)
    assert denied == set(), results
    assert (project / "build").is_dir() and (project / "a" / "b" / "c").is_dir()
    assert (project / "notes.txt").exists() and not (project / "moved.txt").exists()
    assert (project / "data.txt").read_text() == "new\n" and (project / "out.txt").read_text() == "hi\n"
    assert (project / "py.txt").read_text() == "x" and (project / "from_script.txt").read_text() == "made"
    assert "first" in results["git log --oneline"] and "(T " in results["git blame data.txt"]
    assert "?? " in results["git status --short"] and "data.txt" in results["git show --stat HEAD"]


def test_a_saved_dont_ask_again_rule_is_the_same_consent(project):
    # what the REPL's "Yes, and don't ask again" writes; a project's own settings need its trust
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"allow": ["Bash(mkdir:*)"]}}))
    denied, _, _ = run(project, ["mkdir saved", "mkdir ../saved-outside"], "--trust", rules=["Read"])
    assert (project / "saved").is_dir() and not (project.parent / "saved-outside").exists()
    assert denied == {"c1"}


REFUSED = [
    # outside the project
    "mkdir ../outside", "touch ../outside.txt", "cp notes.txt ../copied.txt", "mv data.txt ../moved.txt",
    "rm ../victim.txt", "sed -i s/keep/gone/ ../victim.txt", "echo x | tee ../teed.txt", "touch ~/in-home",
    # protected paths: refused in every mode
    "sed -i s/a/b/ .git/config", "touch .git/hooks/pre-commit", "cp notes.txt .claude/settings.json",
    "mkdir -p .codeloop && touch .codeloop/settings.json", "rm -rf .git", "mv notes.txt .cfg/settings.json",
    # ask paths, and configuration folders git, editors and codeloop read
    "touch .mcp.json", "mkdir .claude", "mkdir -p sub/.git/hooks", "cp notes.txt .vscode/tasks.json",
    # Read-denied (--disallowedTools "Read(./secret.txt)")
    "rm secret.txt", "cp notes.txt secret.txt", "sed -i s/KEY/K/ secret.txt", "mv secret.txt public.txt",
    # a redirect, or a chained command, is judged on its own
    "echo x > redirected.txt", "mkdir chained && rm -rf ../victim.txt", "touch t1; chmod 777 t1",
    "python3 make_file.py > log.txt", "mkdir m1 | sh",
]


def test_the_same_commands_aimed_elsewhere_are_refused(project):
    (project / "notes.txt").write_text("n\n")
    denied, results, refused = run(project, REFUSED, "--disallowedTools", "Read(./secret.txt)")
    assert all(refused.values()), {c: results[c] for c, r in refused.items() if not r}
    assert not (project.parent / "outside").exists() and not (project.parent / "outside.txt").exists()
    assert (project.parent / "victim.txt").read_text() == "keep\n"
    assert not (project.parent / "home" / "in-home").exists() and (project / ".git" / "config").exists()
    assert not (project / ".mcp.json").exists() and not (project / ".claude").exists()
    assert (project / "secret.txt").read_text() == "KEY=1\n" and not (project / "public.txt").exists()
    for made in ("redirected.txt", "chained", "t1", "log.txt", "m1", ".codeloop", "sub", ".vscode"):
        assert not (project / made).exists(), made


@pytest.mark.parametrize("key, value, command", [
    ("core.pager", "touch ../pwned", "git log"),
    ("core.fsmonitor", "touch ../pwned", "git status"),
    ("diff.evil.textconv", "touch ../pwned", "git diff"),
    ("filter.evil.clean", "touch ../pwned", "git status --short"),
    ("diff.external", "touch ../pwned", "git show HEAD"),
])
def test_git_reads_ask_where_the_repository_names_a_program(project, key, value, command):
    (project / ".gitattributes").write_text("*.txt diff=evil filter=evil\n")
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(project), "commit", "-qm", "base"], check=True)
    (project / "data.txt").write_text("changed\n")
    subprocess.run(["git", "-C", str(project), "config", key, value], check=True)
    denied, results, _ = run(project, [command], rules=["Read"])
    assert denied == {"c0"} and key in results[command], results
    assert not (project.parent / "pwned").exists()
