"""The REPL's forms for the two tools whose permission prompt is the feature (issue 16).

AskUserQuestion: each question is a numbered selector (the REPL's `choose`) ending, as Claude
Code's does, with "Other": the user types an answer of their own in the input line, and that text
is the answer to the question. A multiSelect question is answered one pick at a time until "Done".
The answers go back as the tool's `updatedInput.answers` ({question: label or typed text, comma-
joined for several}), as Claude Code's form does.
ExitPlanMode: the plan (drawn in the call's cell just above) is pointed to, then "yes, auto-accept
edits" / "yes, approve edits manually" / "no, keep planning"; a yes switches the permission mode
before the tool runs.
"""

from __future__ import annotations

from typing import Any

DONE = "__done__"
OTHER = "__other__"
OTHER_LABEL = "Other (type your own answer)"
KEEP_PLANNING = ("The user chose to keep planning. Stay in plan mode, refine the plan (use AskUserQuestion if "
                 "something is unclear) and present it again with ExitPlanMode.")


def _deny(message: str) -> Any:
    from codeloop.tools.base import PermissionBehavior, PermissionDecision

    return PermissionDecision(PermissionBehavior.DENY, message)


async def ask_questions(repl: Any, raw: dict[str, Any]) -> Any:
    from codeloop.tools.base import PermissionBehavior, PermissionDecision

    answers: dict[str, str] = {}
    for q in raw.get("questions") or []:
        labels = [str(o.get("label", "")) for o in q.get("options") or []]
        options = [(lab, f"{lab} — {o.get('description', '')}" if o.get("description") else lab)
                   for lab, o in zip(labels, q.get("options") or [])]
        title = f"[{q.get('header', '')}] {q.get('question', '')}".strip()
        if not q.get("multiSelect"):
            pick = await _pick(repl, title, [*options, (OTHER, OTHER_LABEL)])
            if pick is None:
                return _deny("The user declined to answer the questions.")
            answers[q["question"]] = pick
            continue
        picked: list[str] = []
        while True:
            left = [o for o in options if o[0] not in picked]
            pick = await _pick(repl, f"{title} (pick one at a time; Done to finish)",
                               [*left, (OTHER, OTHER_LABEL), *([(DONE, "Done")] if picked else [])])
            if pick is None:
                return _deny("The user declined to answer the questions.")
            if pick == DONE:
                break
            picked.append(pick)
            if len([p for p in picked if p in labels]) == len(options):
                break
        answers[q["question"]] = ", ".join(picked)
    return PermissionDecision(PermissionBehavior.ALLOW, updated_input={**raw, "answers": answers})


async def _pick(repl: Any, title: str, options: list[tuple[str, str]]) -> str | None:
    """A label, or the text typed after choosing Other (Esc there goes back to the choices)."""
    while True:
        pick = await repl.choose(title, options)
        if pick != OTHER:
            return pick
        typed = await repl.ask_text(f"{title} — your answer:")
        if typed:
            return typed


async def approve_plan(repl: Any, raw: dict[str, Any]) -> Any:
    from codeloop.permissions.policy import PermissionMode
    from codeloop.tools.base import PermissionBehavior, PermissionDecision

    plan = str(raw.get("plan") or "").strip()
    # the plan itself is drawn once, as markdown, in the call's cell right above (cells.call_body)
    repl.show("Here is Claude's plan (above)." if plan else "Here is Claude's plan: it is in the message above.")
    pick = await repl.choose("Would you like to proceed?",
                             [("acceptEdits", "Yes, and auto-accept edits"),
                              ("default", "Yes, and manually approve edits"),
                              ("no", "No, keep planning")])
    if pick in ("acceptEdits", "default"):
        repl.conv.config.policy.set_mode(PermissionMode(pick))
        repl._invalidate()
        return PermissionDecision(PermissionBehavior.ALLOW)
    return _deny(KEEP_PLANNING)
