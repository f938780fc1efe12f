"""EnterWorktree and ExitWorktree: move the session into a git worktree and back.

Names, input schemas and result shapes follow Claude Code's (2.1.x). EnterWorktree makes
`<repo>/.claude/worktrees/<name>` on a new branch `worktree-<name>` from the current HEAD (as
`--worktree` does at start-up), or enters an existing worktree of the repository (`path`), and
moves the session's working folder there: `ctx.cwd`, which Bash, the file tools and the search
tools all start from. ExitWorktree goes back to the folder the session was in, keeping the
worktree or removing it (refused while it holds uncommitted files or commits the session did not
start from, unless `discard_changes`).

Fails closed: a worktree outside the session's starting folder, a `.claude`/`worktrees` folder that
is a symbolic link, or a name with `..` segments is refused before git runs. The permission
rules and the sandbox stay rooted where the session started (the worktree lies inside it).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from codeloop.shellpath import program
from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.worktree_state import WorktreeSession

_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
_GIT_TIMEOUT_S = 120


async def _git(cwd: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        program("git"), "-c", "core.fsmonitor=false", *args, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), _GIT_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return 124, "", f"git {args[0]} timed out"
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


def _inside(path: Path, folder: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _valid_name(name: str) -> bool:
    segments = name.split("/")
    return 0 < len(name) <= 64 and all(_SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments)


async def _listed_worktrees(root: Path) -> list[tuple[Path, str | None]]:
    rc, out, _ = await _git(root, "worktree", "list", "--porcelain")
    found: list[tuple[Path, str | None]] = []
    for block in out.split("\n\n") if rc == 0 else []:
        fields = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
        if "worktree" in fields:
            branch = fields.get("branch")
            found.append((Path(fields["worktree"]), branch.removeprefix("refs/heads/") if branch else None))
    return found


class EnterWorktreeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, description='Optional name for a new worktree: "/"-separated segments of letters, '
                                               "digits, dots, underscores and dashes, 64 characters at most. A "
                                               "random name is used when omitted. Not with `path`.")
    path: str | None = Field(None, description="An existing worktree of this repository (as `git worktree list` "
                                               "shows it) to switch into instead of creating one. Not with `name`.")


class EnterWorktreeTool(Tool):
    name: ClassVar[str] = "EnterWorktree"
    should_defer: ClassVar[bool] = True
    description: ClassVar[str] = (
        "Create an isolated git worktree and move this session into it — only when the user (or CLAUDE.md) asks "
        "for a worktree; for branches use git. In a git repository it makes .claude/worktrees/<name> on a new "
        "branch worktree-<name> from the current HEAD and switches the session's working directory there, so "
        "commands and relative paths act in the worktree. Pass `path` instead to switch into an existing worktree "
        "of the repository. Not while already in a worktree session (unless switching with `path`). Leave with "
        "ExitWorktree (keep or remove).")
    input_model: ClassVar[type[BaseModel]] = EnterWorktreeInput

    def is_enabled(self, ctx: ToolContext) -> bool:
        return ctx.agent_id is None

    async def check_permissions(self, inp: EnterWorktreeInput, ctx: ToolContext) -> PermissionDecision:
        # A new worktree is made under the session's own folder; entering one named by path asks.
        return PermissionDecision(PermissionBehavior.ASK if inp.path else PermissionBehavior.ALLOW)

    async def call(self, inp: EnterWorktreeInput, ctx: ToolContext) -> ToolResult:
        if inp.name and inp.path:
            raise ToolError("Provide at most one of `name` or `path`, not both.")
        current: WorktreeSession | None = ctx.worktree
        if current is not None and not inp.path:
            raise ToolError("Already in a worktree session. Pass `path` to switch into another existing worktree, "
                            "or use ExitWorktree to leave this one before creating a new worktree.")
        rc, top, err = await _git(ctx.cwd, "rev-parse", "--show-toplevel")
        if rc != 0:
            raise ToolError(f"EnterWorktree needs a git repository; {ctx.cwd} is not in one.")
        root = Path(top.strip())
        if inp.path:
            return await self._enter_existing(Path(inp.path).expanduser(), root, ctx, current)
        name = inp.name or f"wt-{secrets.token_hex(3)}"
        if not _valid_name(name):
            raise ToolError(f"Invalid worktree name {name!r}: use \"/\"-separated segments of letters, digits, "
                            "'.', '_' and '-' (no '.' or '..' segments), 64 characters at most.")
        base = root / ".claude" / "worktrees"
        if not _inside(root, ctx.project_dir):
            raise ToolError(f"No worktree was made: the repository root {root} lies outside the folder this session "
                            f"started in ({ctx.project_dir}). Start codeloop at the repository root, or use "
                            "--worktree.")
        for folder in (root / ".claude", base):
            if folder.is_symlink():
                raise ToolError(f"No worktree was made: {folder} is a symbolic link.")
        path = base / name
        if os.path.lexists(path):
            raise ToolError(f"{path} already exists; pass it as `path` to switch into it.")
        if ctx.lifecycle_hooks is not None:   # a WorktreeCreate hook replaces git (other version control)
            answer = await ctx.lifecycle_hooks.worktree_create(name)
            if answer.configured:
                return self._enter_made_by_hook(answer.path, answer.error, ctx)
        _, head, _ = await _git(root, "rev-parse", "HEAD")
        branch = "worktree-" + name.replace("/", "-")
        rc, _, err = await _git(root, "worktree", "add", "-b", branch, str(path))
        if rc != 0:
            raise ToolError(f"git worktree add failed: {err.strip()[:400]}")
        if not _inside(path, base):   # something swapped a folder for a link while git ran
            await _git(root, "worktree", "remove", "--force", str(path))
            raise ToolError("No worktree was made: its folder resolved outside .claude/worktrees.")
        ctx.worktree = WorktreeSession(path, ctx.cwd, branch, True, head.strip() or None)
        ctx.cwd = path
        msg = (f"Created worktree at {path} on branch {branch}. The session is now working in the worktree. "
               "Use ExitWorktree to leave mid-session.")
        return ToolResult(msg, data={"worktreePath": str(path), "worktreeBranch": branch, "message": msg})

    @staticmethod
    def _enter_made_by_hook(path: str | None, error: str | None, ctx: ToolContext) -> ToolResult:
        if path is None or not Path(path).is_dir():
            why = error or f"{path} is not a folder"
            raise ToolError(f"No worktree was made: the WorktreeCreate hook failed ({why}).")
        made = Path(path)
        ctx.worktree = WorktreeSession(made, ctx.cwd, None, True, None, by_hook=True)
        ctx.cwd = made
        msg = (f"Created worktree at {made} (by the WorktreeCreate hook). The session is now working in the "
               "worktree. Use ExitWorktree to leave mid-session.")
        return ToolResult(msg, data={"worktreePath": str(made), "message": msg})

    async def _enter_existing(self, target: Path, root: Path, ctx: ToolContext,
                              current: WorktreeSession | None) -> ToolResult:
        target = target if target.is_absolute() else ctx.cwd / target
        real = Path(os.path.realpath(target))
        listed = {Path(os.path.realpath(p)): b for p, b in await _listed_worktrees(root)}
        if real not in listed:
            raise ToolError(f"{target} is not a worktree of this repository (see `git worktree list`).")
        if not _inside(real, ctx.project_dir):
            raise ToolError(f"The session was not moved: {real} lies outside the folder this session started in "
                            f"({ctx.project_dir}).")
        origin = current.original_cwd if current is not None else ctx.cwd
        ctx.worktree = WorktreeSession(real, origin, listed[real], False, None)
        ctx.cwd = real
        branch = listed[real]
        msg = (f"Entered worktree at {real}" + (f" on branch {branch}" if branch else "") +
               ". The session is now working in the worktree; ExitWorktree will not remove a worktree entered this "
               "way (use action \"keep\" to go back).")
        return ToolResult(msg, data={"worktreePath": str(real), **({"worktreeBranch": branch} if branch else {}),
                                     "message": msg})


class ExitWorktreeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["keep", "remove"] = Field(description='"keep" leaves the worktree and branch on disk; "remove" '
                                                          "deletes the worktree and the branch EnterWorktree made.")
    discard_changes: bool | None = Field(None, description='Required true when action is "remove" and the worktree '
                                                           "has uncommitted files or new commits; set it only after "
                                                           "the user has confirmed.")


class ExitWorktreeTool(Tool):
    name: ClassVar[str] = "ExitWorktree"
    should_defer: ClassVar[bool] = True
    description: ClassVar[str] = (
        "Leave the worktree session EnterWorktree started and return to the original working directory — only "
        "when the user asks. action \"keep\" leaves the worktree and its branch on disk; \"remove\" deletes the "
        "worktree and the branch EnterWorktree made, and is refused while the worktree has uncommitted files or "
        "new commits unless discard_changes is true (confirm with the user first). It touches only a worktree "
        "entered in this session; with none it does nothing.")
    input_model: ClassVar[type[BaseModel]] = ExitWorktreeInput

    def is_enabled(self, ctx: ToolContext) -> bool:
        return ctx.agent_id is None

    async def check_permissions(self, inp: ExitWorktreeInput, ctx: ToolContext) -> PermissionDecision:
        risky = inp.action == "remove" and bool(inp.discard_changes)
        return PermissionDecision(PermissionBehavior.ASK if risky else PermissionBehavior.ALLOW)

    async def call(self, inp: ExitWorktreeInput, ctx: ToolContext) -> ToolResult:
        wt: WorktreeSession | None = ctx.worktree
        if wt is None:
            msg = ("No-op: there is no active EnterWorktree session to exit. This tool only operates on worktrees "
                   "created or entered by EnterWorktree in the current session.")
            return ToolResult(msg, data={"action": inp.action, "message": msg})
        base = {"action": inp.action, "originalCwd": str(wt.original_cwd), "worktreePath": str(wt.path),
                **({"worktreeBranch": wt.branch} if wt.branch else {})}
        if inp.action == "keep":
            self._leave(ctx, wt)
            msg = (f"Exited worktree. Your work is preserved at {wt.path}" + (f" on branch {wt.branch}" if wt.branch
                   else "") + f". Session is now back in {ctx.cwd}.")
            return ToolResult(msg, data={**base, "message": msg})
        if not wt.created:
            raise ToolError(f"This tool will not remove the worktree at {wt.path}: it was not created by "
                            "EnterWorktree in this session. Use action: \"keep\" to exit and leave it on disk.")
        if wt.by_hook:   # its own version control: the WorktreeRemove hooks remove it
            errors = await ctx.lifecycle_hooks.worktree_remove(str(wt.path)) if ctx.lifecycle_hooks else []
            if errors:
                raise ToolError(f"The WorktreeRemove hook failed: {'; '.join(errors)[:400]}. The session is still "
                                "in the worktree.")
            self._leave(ctx, wt)
            msg = (f"Exited and removed worktree at {wt.path} (by the WorktreeRemove hook). Session is now back in "
                   f"{ctx.cwd}.")
            return ToolResult(msg, data={**base, "message": msg})
        files, commits = await self._unsaved_work(wt)
        if (files or commits) and not inp.discard_changes:
            raise ToolError(f"Worktree has {files} uncommitted file(s) and {commits} commit(s) not on the branch it "
                            "started from. Removing will discard this work permanently. Confirm with the user, then "
                            "call again with discard_changes: true, or use action: \"keep\".")
        rc, top, _ = await _git(wt.original_cwd, "rev-parse", "--show-toplevel")
        root = Path(top.strip()) if rc == 0 else wt.original_cwd
        rc, _, err = await _git(root, "worktree", "remove", "--force", str(wt.path))
        if rc != 0:
            raise ToolError(f"git worktree remove failed: {err.strip()[:400]}. The session is still in the worktree.")
        if wt.branch:
            await _git(root, "branch", "-D", wt.branch)
        if ctx.lifecycle_hooks is not None:   # told, as Claude Code tells them; git removed it already
            await ctx.lifecycle_hooks.worktree_remove(str(wt.path))
        self._leave(ctx, wt)
        msg = (f"Exited and removed worktree at {wt.path}" + (f" and branch {wt.branch}" if wt.branch else "") +
               f". Session is now back in {ctx.cwd}.")
        return ToolResult(msg, data={**base, "discardedFiles": files, "discardedCommits": commits, "message": msg})

    @staticmethod
    def _leave(ctx: ToolContext, wt: WorktreeSession) -> None:
        back = wt.original_cwd if wt.original_cwd.is_dir() else ctx.project_dir
        ctx.cwd, ctx.worktree = back, None

    @staticmethod
    async def _unsaved_work(wt: WorktreeSession) -> tuple[int, int]:
        rc, out, _ = await _git(wt.path, "status", "--porcelain", "--untracked-files=all")
        if rc != 0:
            raise ToolError(f"Could not check the worktree at {wt.path} for changes; nothing was removed.")
        files = len([line for line in out.splitlines() if line.strip()])
        commits = 0
        if wt.base_head:
            rc, out, _ = await _git(wt.path, "rev-list", "--count", f"{wt.base_head}..HEAD")
            if rc != 0 or not out.strip().isdigit():
                raise ToolError(f"Could not count the commits made in {wt.path}; nothing was removed.")
            commits = int(out.strip())
        return files, commits
