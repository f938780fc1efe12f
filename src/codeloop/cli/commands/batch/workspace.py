"""Isolated workspaces for batch tasks: a clean checkout or copy per task, and its diff.

Every task gets a folder of its own under the batch folder:
- `repo` (a path or git URL) + `ref`: the repository is cloned once, bare, into a cache
  (`repos/`, guarded by a file lock so parallel tasks clone it once), then each task gets a
  `git clone --shared` of the cache checked out at `ref`. The user's repository is never
  touched, and uncommitted changes in it are not part of the task.
- `workdir`: a copy of the folder (its `.git` too when it has one).
- neither: an empty folder.
The optional setup command runs next; then the tree is snapshotted (`git write-tree` through a
private index, so neither HEAD nor the agent's index moves) and the task's diff is taken
against that snapshot: setup output never shows up as the agent's change.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

GIT_ID = ["-c", "user.name=codeloop batch", "-c", "user.email=batch@codeloop.invalid",
          "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
_SAFE_RE = re.compile(r"[^A-Za-z0-9_.-]+")
_INDEX_NAME = "codeloop-batch-index"


class WorkspaceError(Exception):
    """The workspace could not be made (clone, checkout, copy or setup failed)."""


def folder_name(task_id: str) -> str:
    """A filesystem-safe, collision-free folder name for a task id."""
    safe = _SAFE_RE.sub("_", task_id).strip("._")[:60] or "task"
    return f"{safe}-{hashlib.sha1(task_id.encode()).hexdigest()[:8]}"


def _git(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 600) -> str:
    try:
        proc = subprocess.run(["git", *GIT_ID, *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise WorkspaceError("git is not installed; batch workspaces need it") from exc
    except subprocess.TimeoutExpired as exc:
        raise WorkspaceError(f"git {args[0]} timed out after {timeout:.0f}s") from exc
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise WorkspaceError(f"git {args[0]} failed: {msg[-1] if msg else f'exit {proc.returncode}'}")
    return proc.stdout


def _cache(repo: str, batch_dir: Path) -> Path:
    """A bare clone of `repo`, made once per batch folder whatever the number of tasks using it."""
    root = batch_dir / "repos"
    root.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha1(repo.encode()).hexdigest()[:16]
    bare = root / f"{key}.git"
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (bare / "HEAD").exists():
            tmp = root / f"{key}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            _git(["clone", "--bare", "--quiet", repo, str(tmp)])
            tmp.rename(bare)
    return bare


def _checkout(repo: str, ref: str | None, ws: Path, batch_dir: Path) -> None:
    bare = _cache(repo, batch_dir)
    _git(["clone", "--shared", "--no-checkout", "--quiet", str(bare), str(ws)])
    target = ref or "HEAD"
    try:
        _git(["checkout", "--detach", "--quiet", target], cwd=ws)
    except WorkspaceError:
        # A ref newer than the cache (or a commit not on a branch head): fetch it into the cache once.
        with open(bare.parent / f"{bare.stem}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                _git(["fetch", "--quiet", repo, target], cwd=bare)
            except WorkspaceError as exc:
                raise WorkspaceError(f"ref {target!r} not found in {repo}: {exc}") from None
        _git(["fetch", "--quiet", str(bare), target], cwd=ws)
        _git(["checkout", "--detach", "--quiet", "FETCH_HEAD"], cwd=ws)


def _index_env(ws: Path) -> dict[str, str]:
    git_dir = ws / ".git"
    env = dict(os.environ)
    env["GIT_INDEX_FILE"] = str(git_dir / _INDEX_NAME)
    return env


def snapshot(ws: Path) -> str:
    """The tree id of everything in the workspace now (ignored files aside)."""
    env = _index_env(ws)
    real_index = ws / ".git" / "index"
    if real_index.exists() and not Path(env["GIT_INDEX_FILE"]).exists():
        shutil.copyfile(real_index, env["GIT_INDEX_FILE"])  # keeps stat data: no re-hashing of big trees
    _git(["add", "-A", "."], cwd=ws, env=env)
    return _git(["write-tree"], cwd=ws, env=env).strip()


def diff(ws: Path, baseline: str) -> str:
    """The task's change: the workspace now against the post-setup snapshot, as a git patch."""
    if not (ws / ".git").is_dir():
        raise WorkspaceError("the workspace is no longer a git repository")
    env = _index_env(ws)
    _git(["add", "-A", "."], cwd=ws, env=env)
    return _git(["diff", "--cached", "--no-color", "--no-ext-diff", baseline], cwd=ws, env=env)


def prepare(spec, batch_dir: Path, *, setup_timeout: float = 900) -> tuple[Path, str]:
    """Make the task's workspace from scratch (a retried task starts clean); returns (path, baseline)."""
    ws = batch_dir / "workspaces" / folder_name(spec.id)
    if ws.exists():
        shutil.rmtree(ws)
    ws.parent.mkdir(parents=True, exist_ok=True)
    if spec.repo:
        _checkout(spec.repo, spec.ref, ws, batch_dir)
    elif spec.workdir:
        src = Path(spec.workdir)
        if not src.is_dir():
            raise WorkspaceError(f"workdir {spec.workdir} is not a folder")
        try:
            shutil.copytree(src, ws, symlinks=True)
        except (OSError, shutil.Error) as exc:
            raise WorkspaceError(f"could not copy {spec.workdir}: {exc}") from exc
    else:
        ws.mkdir()
    if not (ws / ".git").is_dir():
        _git(["init", "--quiet"], cwd=ws)
    if spec.setup:
        _run_setup(spec.setup, ws, setup_timeout)
    return ws, snapshot(ws)


def _run_setup(command: str, ws: Path, timeout: float) -> None:
    try:
        proc = subprocess.run(["/bin/sh", "-c", command], cwd=ws, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise WorkspaceError(f"setup command timed out after {timeout:.0f}s") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip())[-500:]
        raise WorkspaceError(f"setup command exited with status {proc.returncode}: {tail}")
