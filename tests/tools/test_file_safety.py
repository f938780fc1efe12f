"""The file tools use the object that was checked (issue 12 item 4).

A file swapped for a symlink at the permission check (the path guard is the seam: the swap
happens inside it, after the real guard has answered) is refused — not read, not written — and
a hard link to a denied file is refused like the denied file itself.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.tools.base import ToolContext, ToolError
from codeloop.tools.builtin import write as write_mod
from codeloop.tools.builtin.edit import EditTool
from codeloop.tools.builtin.glob import GlobTool
from codeloop.tools.builtin.grep import GrepTool
from codeloop.tools.builtin.read import ReadTool
from codeloop.tools.builtin.write import WriteTool

read, write, edit = ReadTool(), WriteTool(), EditTool()
SECRET = "hunter2-the-secret"
BACKENDS = [pytest.param(False, id="python"), pytest.param(True, id="rg")]


def policy_ctx(tmp_path: Path, deny: list[str], guard=None) -> tuple[PermissionPolicy, ToolContext]:
    policy = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.BYPASS,
                              settings_rules=[("deny", rule, "cli") for rule in deny])
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, path_guard=guard or policy.guard_path,
                      read_denied=policy.read_filter(), denied_inodes=policy.denied_inodes)
    return policy, ctx


def swapping_guard(policy: PermissionPolicy, victim: Path, target: Path):
    """The real guard, then — once it has said yes — `victim` becomes a symlink to `target`."""
    swapped: list[bool] = []

    def guard(tool: str, path: Path) -> None:
        policy.guard_path(tool, path)
        if not swapped:
            swapped.append(True)
            if victim.is_dir() and not victim.is_symlink():
                victim.rename(victim.with_name(victim.name + ".moved"))
            else:
                victim.unlink()
            victim.symlink_to(target)
    return guard


async def call(tool, ctx, **raw):
    from codeloop.tools.registry import parse_tool_input
    return await tool.call(parse_tool_input(tool, raw), ctx)


# -- symlink swapped in at the check --------------------------------------------------------------
@pytest.mark.parametrize("denied", [True, False], ids=["target-denied", "target-not-denied"])
async def test_read_refuses_file_swapped_for_symlink_at_check(tmp_path, denied):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "key").write_text(SECRET)
    notes = tmp_path / "notes.txt"
    notes.write_text("harmless\n")
    policy, _ = policy_ctx(tmp_path, ["Read(outside/**)"] if denied else [])
    _, ctx = policy_ctx(tmp_path, [], guard=swapping_guard(policy, notes, outside / "key"))
    with pytest.raises(ToolError) as ei:
        await call(read, ctx, file_path=str(notes))
    assert SECRET not in str(ei.value)
    assert "symbolic link" in str(ei.value) and str(notes) not in ctx.read_files


async def test_read_refuses_parent_folder_swapped_for_symlink(tmp_path):
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "a.txt").write_text(SECRET)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("public\n")
    policy, _ = policy_ctx(tmp_path, [])
    _, ctx = policy_ctx(tmp_path, [], guard=swapping_guard(policy, tmp_path / "docs", tmp_path / "secrets"))
    with pytest.raises(ToolError, match="symbolic link") as ei:
        await call(read, ctx, file_path=str(tmp_path / "docs" / "a.txt"))
    assert SECRET not in str(ei.value)


@pytest.mark.parametrize("tool", ["Write", "Edit"])
async def test_write_and_edit_refuse_file_swapped_for_symlink_at_check(tmp_path, tool):
    settings = tmp_path / ".codeloop" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"deny": ["Bash"]}}\n')
    before = settings.read_bytes()
    notes = tmp_path / "notes.txt"
    notes.write_text("old text\n")
    policy, ctx0 = policy_ctx(tmp_path, [])
    await call(read, ctx0, file_path=str(notes))
    _, ctx = policy_ctx(tmp_path, [], guard=swapping_guard(policy, notes, settings))
    ctx.read_files = ctx0.read_files
    with pytest.raises(ToolError, match="symbolic link"):
        if tool == "Write":
            await call(write, ctx, file_path=str(notes), content="{}")
        else:
            await call(edit, ctx, file_path=str(notes), old_string="old", new_string="{}")
    assert settings.read_bytes() == before


async def test_symlink_planted_after_the_checks_is_replaced_not_written_through(tmp_path, monkeypatch):
    settings = tmp_path / ".codeloop" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("v1\n")
    _, ctx = policy_ctx(tmp_path, [])
    await call(read, ctx, file_path=str(notes))
    real_check = write_mod.ensure_fresh_read

    def check_then_swap(*args, **kwargs):  # the last moment before the bytes go to disk
        real_check(*args, **kwargs)
        notes.unlink()
        notes.symlink_to(settings)
    monkeypatch.setattr(write_mod, "ensure_fresh_read", check_then_swap)
    await call(write, ctx, file_path=str(notes), content="mine\n")
    assert settings.read_text() == "{}\n"
    assert not notes.is_symlink() and notes.read_text() == "mine\n"


async def test_new_file_in_folder_swapped_for_symlink_is_refused(tmp_path):
    (tmp_path / "denied").mkdir()
    (tmp_path / "out").mkdir()
    policy, _ = policy_ctx(tmp_path, [])
    _, ctx = policy_ctx(tmp_path, [], guard=swapping_guard(policy, tmp_path / "out", tmp_path / "denied"))
    with pytest.raises(ToolError, match="symbolic link"):
        await call(write, ctx, file_path=str(tmp_path / "out" / "planted.txt"), content="x")
    assert list((tmp_path / "denied").iterdir()) == []


# -- hard links -----------------------------------------------------------------------------------
async def test_hard_link_to_denied_file_is_refused_by_read(tmp_path):
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    os.link(tmp_path / "secret.txt", tmp_path / "innocent.txt")
    (tmp_path / "other.txt").write_text("fine\n")
    _, ctx = policy_ctx(tmp_path, ["Read(./secret.txt)"])
    with pytest.raises(ToolError, match="hard link") as ei:
        await call(read, ctx, file_path=str(tmp_path / "innocent.txt"))
    assert SECRET not in str(ei.value)
    assert "fine" in (await call(read, ctx, file_path=str(tmp_path / "other.txt"))).content


async def test_hard_link_with_unrelated_links_is_still_readable(tmp_path):
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "a.txt").write_text("shared\n")
    os.link(tmp_path / "a.txt", tmp_path / "b.txt")
    _, ctx = policy_ctx(tmp_path, ["Read(./secret.txt)"])
    assert "shared" in (await call(read, ctx, file_path=str(tmp_path / "b.txt"))).content


@pytest.mark.parametrize("rg", BACKENDS)
async def test_grep_skips_hard_link_to_denied_file(tmp_path, rg):
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    os.link(tmp_path / "secret.txt", tmp_path / "innocent.txt")
    (tmp_path / "ok.txt").write_text("hunter2 is a famous password\n")
    _, ctx = policy_ctx(tmp_path, ["Read(./secret.txt)"])
    r = await call(GrepTool(use_ripgrep=rg), ctx, pattern="hunter2", output_mode="content")
    assert SECRET not in r.content
    assert r.content == f"{tmp_path / 'ok.txt'}:1:hunter2 is a famous password"
    with pytest.raises(ToolError, match="hard link"):
        await call(GrepTool(use_ripgrep=rg), ctx, pattern="hunter2", path=str(tmp_path / "innocent.txt"))


@pytest.mark.parametrize("tool", ["Write", "Edit"])
async def test_write_and_edit_refuse_hard_link_to_denied_file(tmp_path, tool):
    guarded = tmp_path / "guarded.txt"
    guarded.write_text("keep me\n")
    os.link(guarded, tmp_path / "alias.txt")
    _, ctx = policy_ctx(tmp_path, ["Edit(./guarded.txt)"])
    await call(read, ctx, file_path=str(tmp_path / "alias.txt"))
    with pytest.raises(ToolError, match="hard link"):
        if tool == "Write":
            await call(write, ctx, file_path=str(tmp_path / "alias.txt"), content="gone\n")
        else:
            await call(edit, ctx, file_path=str(tmp_path / "alias.txt"), old_string="keep", new_string="lose")
    assert guarded.read_text() == "keep me\n"


async def test_too_many_denied_files_to_compare_fails_closed(tmp_path, monkeypatch):
    from codeloop.permissions import paths

    (tmp_path / "a.txt").write_text("x\n")
    os.link(tmp_path / "a.txt", tmp_path / "b.txt")
    _, ctx = policy_ctx(tmp_path, ["Read(*.env)"])
    monkeypatch.setattr(paths, "inodes_named", lambda *a, **k: None)
    with pytest.raises(ToolError, match="too many"):
        await call(read, ctx, file_path=str(tmp_path / "b.txt"))


def test_inodes_named_lists_anchored_and_anywhere_patterns(tmp_path):
    from codeloop.permissions.paths import inodes_named

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".env").write_text("A=1")
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "k1").write_text("k")
    (tmp_path / "plain.txt").write_text("p")
    got = inodes_named([(".env", "cli"), ("./keys/**", "cli")], str(tmp_path), [str(tmp_path)])
    want = {(os.stat(p).st_dev, os.stat(p).st_ino) for p in (tmp_path / "sub" / ".env", tmp_path / "keys" / "k1")}
    assert got == want
    assert inodes_named([("./keys/**", "cli")], str(tmp_path), [], limit=0) is None


# -- Glob ---------------------------------------------------------------------------------------
async def test_glob_refuses_root_swapped_for_symlink_at_check(tmp_path):
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "key.txt").write_text(SECRET)
    (tmp_path / "pub").mkdir()
    (tmp_path / "pub" / "a.txt").write_text("a")
    policy, _ = policy_ctx(tmp_path, [])
    _, ctx = policy_ctx(tmp_path, [], guard=swapping_guard(policy, tmp_path / "pub", tmp_path / "hidden"))
    with pytest.raises(ToolError, match="symbolic link"):
        await call(GlobTool(), ctx, pattern="*.txt", path=str(tmp_path / "pub"))


@pytest.mark.parametrize("rg", BACKENDS)
async def test_grep_and_glob_do_not_follow_symlinks_inside_the_tree(tmp_path, rg):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "key.txt").write_text(SECRET + "\n")
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("no secret here\n")
    (root / "leak.txt").symlink_to(elsewhere / "key.txt")
    (root / "leakdir").symlink_to(elsewhere)
    ctx = ToolContext(cwd=root, project_dir=root)
    r = await call(GrepTool(use_ripgrep=rg), ctx, pattern="hunter2|secret", output_mode="content")
    assert r.content == f"{root / 'a.txt'}:1:no secret here"
    g = await call(GlobTool(use_ripgrep=rg), ctx, pattern="**/*.txt")
    assert g.content == str(root / "a.txt")
