"""The prompt built-ins the model answers: /review, /security-review and /statusline.

/review [PR]: with a pull request number (or URL) the model reads it through `gh pr view` /
`gh pr diff`; without one it reviews the current changes — the branch's commits since it left
the default branch and whatever is not committed yet — of which the prompt carries the git
status, log and diff stat. /security-review embeds the branch's pending changes (status, commit
log, full diff against the merge base) and asks for a focused, high-confidence security review,
as Claude Code's does. Both may run read-only git and gh commands without asking, for their own
query only (`commands_more.REVIEW_TOOLS`).

/statusline asks the model to set up the `statusLine` setting (a command whose first output
line is shown under the prompt, fed the session as JSON on stdin) in the user's settings file,
from what the user asks for or, by default, from their shell prompt (PS1).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from codeloop.input.commands import CommandOutcome
from codeloop.shellpath import program

if TYPE_CHECKING:
    from codeloop.input.commands import CommandHost

GIT_OUTPUT_LIMIT = 60_000
GIT_TIMEOUT_S = 15


def git(cwd: Path, *args: str, limit: int = GIT_OUTPUT_LIMIT) -> str:
    """`git args…` in `cwd`: its output (clipped), or the error it gave."""
    try:
        done = subprocess.run([program("git"), *args], cwd=cwd, capture_output=True, text=True, errors="replace",
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(git {' '.join(args)} failed: {exc})"
    out = done.stdout if done.returncode == 0 else f"(git {' '.join(args)}: {done.stderr.strip()[:300]})"
    return out if len(out) <= limit else out[:limit] + f"\n… [{len(out) - limit} more characters; read the rest " \
                                                      "with git diff]"


def merge_base(cwd: Path) -> str | None:
    """Where this branch left the default branch (origin/HEAD, main or master), or None."""
    for ref in ("origin/HEAD", "main", "master"):
        try:
            done = subprocess.run([program("git"), "merge-base", "HEAD", ref], cwd=cwd, capture_output=True, text=True,
                                  timeout=GIT_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    return None


REVIEW_PR = """You are an expert code reviewer. Review pull request {pr}.

1. Read it: `gh pr view {pr}` for the description and `gh pr diff {pr}` for the changes.
2. Read the surrounding code where the diff alone does not tell you whether a change is right.
3. Write the review:
   - what the pull request does, in two or three sentences;
   - correctness problems and risks first, each with file:line and a concrete fix;
   - then code quality, the project's conventions, performance, tests that are missing;
   - security concerns, if any.
Be concise and specific; use sections and bullet points. Do not change any file."""

REVIEW_LOCAL = """You are an expert code reviewer. Review the current changes in this repository: the \
commits on this branch since {base_desc} and anything not yet committed.

git status:
{status}
Commits:
{log}
Changed files:
{stat}
Read the diffs (`git diff {base}` for everything, `git diff` for what is uncommitted) and the code around \
them, then write the review:
- what the changes do, in two or three sentences;
- correctness problems and risks first, each with file:line and a concrete fix;
- then code quality, the project's conventions, performance, tests that are missing;
- security concerns, if any.
Be concise and specific; use sections and bullet points. Do not change any file."""


async def review(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.input.commands_more import REVIEW_TOOLS

    pr = args.strip()
    if pr:
        return CommandOutcome(prompt=REVIEW_PR.format(pr=pr), allowed_tools=REVIEW_TOOLS)
    cwd = host.conv.config.cwd
    base = merge_base(cwd)
    base_ref = base or "HEAD"
    prompt = REVIEW_LOCAL.format(
        base_desc="it left the default branch" if base else "the last commit (no default branch found)",
        status=git(cwd, "status", "--short", "--branch") or "(clean)",
        log=(git(cwd, "log", "--oneline", "--no-decorate", f"{base}..HEAD") if base else "") or "(none)\n",
        stat=git(cwd, "diff", "--stat", base_ref) or "(no changes)\n", base=base_ref)
    return CommandOutcome(prompt=prompt, allowed_tools=REVIEW_TOOLS)


SECURITY_REVIEW = """You are a senior security engineer. Do a focused security review of the changes on this \
branch below.

Report only vulnerabilities these changes introduce and that you are confident (8/10 or more) an attacker \
could exploit: injection (SQL, command, template, path traversal), authentication or authorization \
bypass, unsafe deserialization, secrets or credentials in code, cryptographic misuse, exposure of \
sensitive data, server-side request forgery, cross-site scripting where output is rendered. Leave out \
denial of service, rate limiting, theoretical issues, style, and anything already present before this \
branch. Read the surrounding code to confirm each finding before reporting it.

For each finding: file:line, severity (high/medium), the category, the exploit scenario in a sentence or \
two, and the fix. If you find nothing that meets the bar, say so plainly. Do not change any file.

git status:
{status}
Commits on this branch:
{log}
The diff{against}:
{diff}"""


async def security_review(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.input.commands_more import REVIEW_TOOLS

    cwd = host.conv.config.cwd
    base = merge_base(cwd)
    base_ref = base or "HEAD"
    prompt = SECURITY_REVIEW.format(
        status=git(cwd, "status", "--short", "--branch") or "(clean)",
        log=(git(cwd, "log", "--no-decorate", f"{base}..HEAD") if base else "") or "(none)\n",
        against=" against the merge base" if base else " of the uncommitted changes",
        diff=git(cwd, "diff", base_ref) or "(no changes)")
    if args.strip():
        prompt += f"\n\nThe user adds: {args.strip()}"
    return CommandOutcome(prompt=prompt, allowed_tools=REVIEW_TOOLS)


STATUSLINE = """Set up my status line: the `statusLine` setting, which runs a command whose first line of \
output is shown under the prompt. Request: {request}

How it works: the setting is `"statusLine": {{"type": "command", "command": "<shell command or script \
path>", "padding": 0}}` in my user settings file ({settings}; create it if missing, keep everything \
else in it). The command gets the session as JSON on stdin — `session_id`, `cwd`, `model` \
(`id`, `display_name`), `workspace` (`current_dir`, `project_dir`), `cost` (`total_cost_usd`) — and \
may print ANSI colours. For anything longer than a one-liner, write a script to {script} (make it \
executable) and point the command at it. If the request is about my shell prompt, read PS1 from my \
shell's rc file (~/.bashrc, ~/.zshrc, …) and reproduce it, replacing parts that only a shell knows \
(\\w, \\u, \\h, git branch) with the JSON fields or commands. Test the command with sample JSON on \
stdin before saving, then tell me what it shows."""


async def statusline(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.config.settings import claude_user_dir

    user = claude_user_dir()
    prompt = STATUSLINE.format(request=args.strip() or "configure it from my shell's PS1 prompt",
                               settings=user / "settings.json", script=user / "statusline.sh")
    return CommandOutcome(prompt=prompt)
