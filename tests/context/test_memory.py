"""Nested-memory prefetch over real directories: what is found, when, and what gets attached."""

import asyncio
from pathlib import Path

import pytest

from codeloop.context.memory import (MAX_MEMORY_CHARS, MemoryPrefetch, attachment_message,
                                     find_nested_memory_files, start_memory_prefetch)


def write(path, content="x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    write(root / "CLAUDE.md", "root instructions")              # already in the user context
    write(root / "CLAUDE.local.md", "root private")
    write(root / "api" / "CLAUDE.md", "api rules")
    write(root / "api" / "CLAUDE.local.md", "api private")
    write(root / "api" / "handlers" / "users.py", "def users(): ...")
    write(root / "web" / ".claude" / "CLAUDE.md", "web rules")
    write(root / "web" / "app.ts", "export {}")
    write(root / "docs" / "CLAUDE.md", "docs rules")
    write(root / "docs" / "index.md", "# docs")
    for skipped in (".git", "node_modules", ".venv", "__pycache__", ".hidden"):
        write(root / skipped / "CLAUDE.md", f"{skipped} must not be found")
        write(root / skipped / "inner" / "CLAUDE.md", f"{skipped} inner must not be found")
    return root


async def settled(cwd, **kw) -> MemoryPrefetch:
    prefetch = start_memory_prefetch(cwd, **kw)
    await prefetch.task
    return prefetch


def rel(root, paths):
    return sorted(str(Path(p).relative_to(root)) for p in paths)


def test_walk_finds_subdirectory_files_only_and_skips_dirs(project):
    files = find_nested_memory_files(project)
    assert rel(project, [f.path for f in files]) == [
        "api/CLAUDE.local.md", "api/CLAUDE.md", "docs/CLAUDE.md", "web/.claude/CLAUDE.md"]
    web = next(f for f in files if f.path.endswith("web/.claude/CLAUDE.md"))
    assert web.directory == str(project / "web")  # .claude/CLAUDE.md governs its parent


def test_walk_orders_shallowest_first_and_shared_before_private(tmp_path):
    write(tmp_path / "a" / "b" / "CLAUDE.md")
    write(tmp_path / "z" / "CLAUDE.local.md")
    write(tmp_path / "z" / "CLAUDE.md")
    paths = [f.path for f in find_nested_memory_files(tmp_path)]
    assert paths == [str(tmp_path / "z" / "CLAUDE.md"), str(tmp_path / "z" / "CLAUDE.local.md"),
                     str(tmp_path / "a" / "b" / "CLAUDE.md")]


def test_walk_respects_max_depth(tmp_path):
    write(tmp_path / "d1" / "CLAUDE.md")
    write(tmp_path / "d1" / "d2" / "d3" / "CLAUDE.md")
    assert rel(tmp_path, [f.path for f in find_nested_memory_files(tmp_path, max_depth=2)]) == ["d1/CLAUDE.md"]
    assert len(find_nested_memory_files(tmp_path, max_depth=3)) == 2


def test_walk_respects_max_files(tmp_path):
    for i in range(20):
        write(tmp_path / f"filler{i:02d}.txt")
    write(tmp_path / "sub" / "CLAUDE.md")
    assert find_nested_memory_files(tmp_path, max_files=10) == []
    assert len(find_nested_memory_files(tmp_path, max_files=100)) == 1


def test_walk_does_not_follow_directory_symlinks(tmp_path):
    outside = tmp_path / "outside"
    write(outside / "CLAUDE.md")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    assert find_nested_memory_files(root) == []


async def test_take_attachments_is_zero_wait_before_settled(project):
    prefetch = start_memory_prefetch(project)
    try:
        # Nothing has run yet on this loop, so the walk cannot have settled.
        assert prefetch.settled_at is None
        already: set[str] = set()
        assert prefetch.take_attachments([str(project / "api" / "handlers" / "users.py")], already) == []
        assert already == set()
        await prefetch.task
        assert prefetch.settled_at is not None
        atts = prefetch.take_attachments([str(project / "api" / "handlers" / "users.py")], already)
        assert [a["type"] for a in atts] == ["nested_memory", "nested_memory"]
        assert [a["content"] for a in atts] == ["api rules", "api private"]
        assert already == {a["path"] for a in atts}
    finally:
        prefetch.close()


async def test_only_files_governing_what_the_model_read(project):
    prefetch = await settled(project)
    atts = prefetch.take_attachments([str(project / "web" / "app.ts"), str(project / "CLAUDE.md")], set())
    assert [(a["path"], a["content"]) for a in atts] == [(str(project / "web" / ".claude" / "CLAUDE.md"),
                                                          "web rules")]
    assert prefetch.take_attachments([], set()) == []


async def test_relative_read_paths_resolve_against_cwd(project):
    prefetch = await settled(project)
    atts = prefetch.take_attachments(["docs/index.md"], set())
    assert [a["content"] for a in atts] == ["docs rules"]


async def test_sibling_with_common_prefix_is_not_inside(tmp_path):
    write(tmp_path / "api" / "CLAUDE.md", "api rules")
    write(tmp_path / "api2" / "main.py")
    prefetch = await settled(tmp_path)
    assert prefetch.take_attachments([str(tmp_path / "api2" / "main.py")], set()) == []


async def test_each_file_attached_once(project):
    prefetch = await settled(project)
    already: set[str] = set()
    first = prefetch.take_attachments([str(project / "docs" / "index.md")], already)
    assert len(first) == 1
    again = prefetch.take_attachments([str(project / "docs" / "index.md"), str(project / "web" / "app.ts")],
                                      already)
    assert [a["content"] for a in again] == ["web rules"]
    assert prefetch.take_attachments([str(project / "docs" / "index.md"), str(project / "web" / "app.ts")],
                                     already) == []


async def test_content_is_capped(tmp_path):
    write(tmp_path / "big" / "CLAUDE.md", "y" * (MAX_MEMORY_CHARS + 500))
    prefetch = await settled(tmp_path)
    [att] = prefetch.take_attachments([str(tmp_path / "big" / "f.py")], set())
    assert att["content"].startswith("y" * MAX_MEMORY_CHARS)
    assert len(att["content"]) < MAX_MEMORY_CHARS + 100


async def test_vanished_file_is_skipped_and_not_marked(tmp_path):
    mem = write(tmp_path / "sub" / "CLAUDE.md", "gone soon")
    prefetch = await settled(tmp_path)
    mem.unlink()
    already: set[str] = set()
    assert prefetch.take_attachments([str(tmp_path / "sub" / "a.py")], already) == []
    assert already == set()


async def test_walk_error_still_settles(tmp_path, monkeypatch):
    import codeloop.context.memory as memory

    def boom(*a, **kw):
        raise PermissionError("denied")
    monkeypatch.setattr(memory, "find_nested_memory_files", boom)
    prefetch = await settled(tmp_path)
    assert prefetch.settled_at is not None
    assert isinstance(prefetch.error, PermissionError)
    assert prefetch.take_attachments([str(tmp_path / "x")], set()) == []


async def test_close_cancels_and_settles(project):
    prefetch = start_memory_prefetch(project)
    prefetch.close()
    with pytest.raises(asyncio.CancelledError):
        await prefetch.task
    assert prefetch.task.cancelled()
    assert prefetch.settled_at is not None
    assert prefetch.take_attachments([str(project / "api" / "x.py")], set()) == []


async def test_close_after_settled_is_harmless(project):
    prefetch = await settled(project)
    prefetch.close()
    assert prefetch.task.done() and not prefetch.task.cancelled()


def test_attachment_message():
    msg = attachment_message({"type": "nested_memory", "path": "/p/api/CLAUDE.md", "content": "api rules"})
    assert msg.role == "user" and msg.is_meta
    assert msg.text == ("<system-reminder>\nContents of /p/api/CLAUDE.md (project instructions for this "
                        "subdirectory):\n\napi rules\n</system-reminder>")


def test_walk_honours_stop_event(project):
    import threading
    stop = threading.Event()
    stop.set()
    assert find_nested_memory_files(project, stop=stop) == []
