"""Isolated workspaces for batch tasks: a clean checkout or copy per task, and its diff.

Every task gets a folder of its own under the batch folder:
- `repo` (a path or git URL) + `ref`: the repository is cloned once, bare, into a cache
  (`repos/`, guarded by a file lock so parallel tasks clone it once), then each task gets a
  `git clone --shared` of the cache checked out at `ref`. The user's repository is never
  touched, and uncommitted changes in it are not part of the task.
- `workdir`: a copy of the folder (its `.git` too when it has one).
- neither: an empty folder.
The optional setup command runs next; then the tree is snapshotted (`git write-tree` through a
private git folder beside the workspace, so neither HEAD nor the agent's index moves) and the
task's diff is taken against that snapshot: setup output never shows up as the agent's change.
The snapshot and the diff run git on the host over a tree the task wrote, so they run it with
a git folder, config and index of codeloop's own (`_private_env`): the workspace's config,
hooks, fsmonitor, filter and diff drivers and submodules' configuration are never read.
When the task ends its workspace is kept or removed (`--keep-workspaces`, `KeepWorkspaces`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from enum import Enum
from pathlib import Path

from codeloop.shellpath import program

GIT_ID = ["-c", "user.name=codeloop batch", "-c", "user.email=batch@codeloop.invalid",
          "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
_SAFE_RE = re.compile(r"[^A-Za-z0-9_.-]+")


class KeepWorkspaces(str, Enum):
    """Which workspaces stay on disk once their task ends (`--keep-workspaces`)."""
    ALL = "all"
    FAILED = "failed"    # every task that did not succeed (interrupted ones too: they can resume)
    NONE = "none"

    def keeps(self, success: bool) -> bool:
        return self is KeepWorkspaces.ALL or (self is KeepWorkspaces.FAILED and not success)


def disk_usage(path: Path) -> int:
    """Bytes a folder takes on disk (allocated blocks; symlinks not followed); 0 when absent."""
    total = 0
    stack = [str(path)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += st.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return total


def remove(ws: Path) -> None:
    """Remove a task's workspace and the batch's private git folder beside it."""
    shutil.rmtree(ws, ignore_errors=True)
    shutil.rmtree(_private(ws), ignore_errors=True)


def private_git(ws: Path) -> Path:
    return _private(ws)


class WorkspaceError(Exception):
    """The workspace could not be made (clone, checkout, copy or setup failed)."""


def folder_name(task_id: str) -> str:
    """A filesystem-safe, collision-free folder name for a task id."""
    safe = _SAFE_RE.sub("_", task_id).strip("._")[:60] or "task"
    return f"{safe}-{hashlib.sha1(task_id.encode()).hexdigest()[:8]}"


def _git(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 600) -> str:
    try:
        proc = subprocess.run([program("git"), *GIT_ID, *args], cwd=cwd, env=env, capture_output=True, text=True,
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


def _private(ws: Path) -> Path:
    """The git folder the batch's own snapshot and diff use: beside the workspace, out of the
    task's reach, with a config codeloop wrote (no fsmonitor, hooks, filters or diff drivers)."""
    return ws.parent / f".{ws.name}.codeloop-git"


def _private_env(ws: Path) -> dict[str, str]:
    """git told to run nothing from the workspace: its own git folder, index and objects (the
    workspace's objects only read, as alternates), no system or user config, no GIT_* from the
    caller. A task can rewrite the workspace's `.git/config`, hooks and `.gitattributes`; a filter
    or diff driver named in `.gitattributes` is then undefined, so git uses the bytes as they are."""
    priv = _private(ws)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=str(priv), GIT_WORK_TREE=str(ws), GIT_INDEX_FILE=str(priv / "index"),
               GIT_OBJECT_DIRECTORY=str(priv / "objects"),
               GIT_ALTERNATE_OBJECT_DIRECTORIES=str(ws / ".git" / "objects"),
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_ATTR_NOSYSTEM="1",
               GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", HOME=str(priv))
    return env


# the configuration git would use is codeloop's own already; these say it again, on the command line
NO_PROGRAMS = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "submodule.recurse=false",
               "-c", "diff.external=", "-c", "core.attributesFile=/dev/null", "-c", "core.pager=cat",
               "--no-pager"]


def _make_private(ws: Path) -> None:
    """The private git folder, made before the task runs (when the workspace is still ours)."""
    priv = _private(ws)
    shutil.rmtree(priv, ignore_errors=True)
    for sub in ("objects", "refs", "info"):
        (priv / sub).mkdir(parents=True)
    (priv / "HEAD").write_text("ref: refs/heads/codeloop-batch\n")
    fmt = subprocess.run([program("git"), "config", "--file", str(ws / ".git" / "config"), "extensions.objectformat"],
                         capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                         stdin=subprocess.DEVNULL).stdout.strip()
    ext = f"[extensions]\n\tobjectformat = {fmt}\n" if fmt == "sha256" else ""
    version = 1 if ext else 0
    (priv / "config").write_text(f"[core]\n\trepositoryformatversion = {version}\n\tbare = false\n{ext}")
    exclude = ws / ".git" / "info" / "exclude"
    if exclude.is_file() and not exclude.is_symlink():
        shutil.copyfile(exclude, priv / "info" / "exclude")
    real_index = ws / ".git" / "index"
    if real_index.is_file() and not real_index.is_symlink():
        shutil.copyfile(real_index, priv / "index")  # keeps stat data: no re-hashing of big trees


def snapshot(ws: Path) -> str:
    """The tree id of everything in the workspace now (ignored files aside)."""
    _make_private(ws)
    env = _private_env(ws)
    _git([*NO_PROGRAMS, "add", "-A", "."], cwd=ws, env=env)
    return _git([*NO_PROGRAMS, "write-tree"], cwd=ws, env=env).strip()


def diff(ws: Path, baseline: str) -> str:
    """The task's change: the workspace now against the post-setup snapshot, as a git patch."""
    if not (ws / ".git").is_dir() or not (_private(ws) / "HEAD").is_file():
        raise WorkspaceError("the workspace is no longer a git repository")
    env = _private_env(ws)
    _git([*NO_PROGRAMS, "add", "-A", "."], cwd=ws, env=env)
    return _git([*NO_PROGRAMS, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv",
                 "--ignore-submodules=none", baseline], cwd=ws, env=env)


def prepare(spec, batch_dir: Path, *, setup_timeout: float = 900) -> tuple[Path, str]:
    """Make the task's workspace from scratch (a retried task starts clean); returns (path, baseline)."""
    ws = batch_dir / "workspaces" / folder_name(spec.id)
    if ws.exists():
        shutil.rmtree(ws)
    shutil.rmtree(_private(ws), ignore_errors=True)
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
