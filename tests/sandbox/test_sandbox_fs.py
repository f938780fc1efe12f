"""Real commands under the real bubblewrap sandbox: filesystem (issue 12, item 1).

Every hostile command here runs only inside the sandbox, inside tmp_path or a throwaway
/var/tmp folder; assertions are made on the host afterwards.
"""

from __future__ import annotations

import os

import pytest
from sandbox_helpers import make_sandbox, needs_bwrap, run_bash

from codeloop.tools.base import ToolError

pytestmark = needs_bwrap


def text(result) -> str:
    return result.content if not isinstance(result, Exception) else str(result)


def test_writes_inside_the_project_land_and_outside_fail(tmp_path, outside):
    target = outside / "escaped.txt"
    (res_in, res_out, res_tmp) = run_bash(make_sandbox(tmp_path), tmp_path,
                                          "echo made > made.txt && mkdir -p sub && echo ok > sub/f",
                                          f"echo x > {target}; touch {outside}/t2; cp made.txt {outside}/",
                                          "echo private > /tmp/codeloop-private-probe "
                                          "&& cat /tmp/codeloop-private-probe")
    assert (tmp_path / "made.txt").read_text() == "made\n" and (tmp_path / "sub" / "f").exists()
    assert not res_in.is_error
    assert os.listdir(outside) == [] and res_out.is_error and "Read-only file system" in text(res_out)
    assert "private" in text(res_tmp) and not os.path.exists("/tmp/codeloop-private-probe")


def test_symlinks_do_not_widen_the_writable_roots(tmp_path, outside):
    (tmp_path / "x").symlink_to("/")
    (tmp_path / "out").symlink_to(outside)
    [r1] = run_bash(make_sandbox(tmp_path), tmp_path,
                    f"echo x > x{outside}/via-root; echo y > out/via-link; ln -s {outside} l2 && echo z > l2/z")
    assert os.listdir(outside) == [] and r1.is_error
    # a writable folder that resolves to / is refused outright, not silently made writable
    [r2] = run_bash(make_sandbox(tmp_path, extra_roots=[tmp_path / "x"]), tmp_path, "touch f")
    assert isinstance(r2, ToolError) and "resolves to '/'" in str(r2)


PROTECTED = {".git/config": "[core]\n\tbare = false\n", ".git/hooks/pre-commit": "#!/bin/sh\nexit 0\n",
             ".mcp.json": '{"mcpServers": {}}\n', ".claude/settings.json": '{"permissions": {}}\n',
             ".codeloop/settings.json": "{}\n", ".claude/commands/hi.md": "hello\n",
             "home/.bashrc": "# rc\n", ".cfg/trusted-folders.json": "[]\n"}

HOSTILE = [
    "echo '{}' > .mcp.json", "echo evil >> .git/config", "cd .git && echo evil > config",
    "cd .git/hooks && echo 'touch pwned' > pre-commit && chmod +x pre-commit",
    "echo x > .git/hooks/post-checkout", "tee .codeloop/settings.json <<< '{}'",
    "cp .mcp.json .claude/settings.json", "sed -i s/permissions/x/ .claude/settings.json",
    "rm -rf .claude .codeloop", "mv .claude .claude-old", "mv .git .git-old && mkdir .git && echo evil > .git/config",
    "git config core.fsmonitor 'touch pwned'", "echo evil > home/.bashrc", "echo '[1]' > .cfg/trusted-folders.json",
    "python3 -c \"open('.git/config','w').write('evil')\"", "chmod 777 .git/config",
    "ln -sf /etc/passwd .mcp.json", "umount .git/config", "mount -o remount,rw .git/config",
    "dd if=/dev/zero of=.git/config bs=1 count=4 conv=notrunc",
]


@pytest.mark.parametrize("command", HOSTILE)
def test_protected_files_are_byte_identical_afterwards(tmp_path, command):
    subprocess_git_init(tmp_path)
    for rel, content in PROTECTED.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    before = {rel: (tmp_path / rel).read_bytes() for rel in PROTECTED}
    hooks = sorted(os.listdir(tmp_path / ".git" / "hooks"))
    run_bash(make_sandbox(tmp_path), tmp_path, command)
    assert {rel: (tmp_path / rel).read_bytes() for rel in PROTECTED} == before
    assert not (tmp_path / "pwned").exists()
    assert sorted(os.listdir(tmp_path / ".git" / "hooks")) == hooks
    assert not (tmp_path / ".git-old").exists() and not (tmp_path / ".claude-old").exists()


def subprocess_git_init(path):
    import subprocess
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def test_a_hard_link_to_a_protected_file_is_read_only_too(tmp_path):
    subprocess_git_init(tmp_path)
    os.link(tmp_path / ".git" / "config", tmp_path / "alias")
    before = (tmp_path / ".git" / "config").read_bytes()
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, "echo '[core] fsmonitor = touch pwned' >> alias")
    assert res.is_error and (tmp_path / ".git" / "config").read_bytes() == before


def test_missing_protected_paths_cannot_be_created_and_leave_no_trace(tmp_path):
    [res] = run_bash(make_sandbox(tmp_path), tmp_path,
                     "echo '{}' > .mcp.json; mkdir -p .claude/commands; echo x > .claude/commands/a.md; "
                     "git init -q . ; echo '[core]' > .git/config; echo rc > home/.profile; ls -a")
    assert "Permission denied" in text(res) or "Read-only file system" in text(res)
    for rel in (".mcp.json", ".claude", ".codeloop", ".git", "home", ".cfg"):
        assert not (tmp_path / rel).exists(), rel


def test_a_protected_path_that_is_a_symlink_refuses_to_start(tmp_path):
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / ".mcp.json").symlink_to(tmp_path / "real.json")
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, "touch f")
    assert isinstance(res, ToolError) and "symlink" in str(res) and ".mcp.json" in str(res)


def test_read_deny_paths_are_masked(tmp_path):
    (tmp_path / "secret.txt").write_text("TOPSECRET-1")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / ".env").write_text("TOPSECRET-2")
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id").write_text("TOPSECRET-3")
    os.link(tmp_path / "secret.txt", tmp_path / "innocent.txt")     # a hard link made before the call
    (tmp_path / "README.md").write_text("public\n")
    sandbox = make_sandbox(tmp_path, deny_read=["./secret.txt", ".env", "./keys/**"])
    results = run_bash(sandbox, tmp_path, "cat secret.txt", "cat *.txt README.md", "grep -r TOPSECRET . ",
                       "cat deep/er/.env; cat keys/id; ls keys", "cp secret.txt copy.txt; cat copy.txt",
                       "ln secret.txt hl.txt; cat hl.txt", "cat innocent.txt", "tar cf - . | strings",
                       "python3 -c \"print(open('secret.txt').read())\"")
    for r in results:
        assert "TOPSECRET" not in text(r)
    assert "public" in text(results[1])
    assert (tmp_path / "secret.txt").read_text() == "TOPSECRET-1"    # masked, not destroyed


def test_pid_namespace_and_no_capabilities(tmp_path):
    [res] = run_bash(make_sandbox(tmp_path), tmp_path,
                     f"kill -0 {os.getpid()} 2>/dev/null && echo SEES-HOST; grep CapEff /proc/self/status; "
                     "ls /proc | grep -c '^[0-9]'")
    out = text(res)
    assert "SEES-HOST" not in out and "0000000000000000" in out
    assert int(out.strip().splitlines()[-1]) < 10      # only the sandbox's own few processes


def test_timeout_kills_everything_in_the_sandbox(tmp_path):
    marker = tmp_path / "late"
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, f"(sleep 3; touch {marker}) & sleep 30", timeout=500)
    assert res.is_error and "timed out" in text(res)
    import time
    time.sleep(3.5)    # not a timing assertion: waits past the point the orphan would have written
    assert not marker.exists()


def test_concurrent_calls_keep_a_shared_placeholder_until_the_last_one_ends(tmp_path):
    import asyncio

    from codeloop.tools.base import ToolContext
    from codeloop.tools.builtin.bash import BashTool
    from codeloop.tools.registry import parse_tool_input

    sandbox = make_sandbox(tmp_path, deny_read=["./nothing"])

    async def one(command):
        ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, sandbox=sandbox)
        return await BashTool().call(parse_tool_input(BashTool(), {"command": command}), ctx)

    async def both():
        return await asyncio.gather(one("sleep 1; echo late > .mcp.json; cat .mcp.json"),
                                    one("echo early > .mcp.json"))
    slow, fast = asyncio.run(both())
    # both writes refused (the stand-in reads as an empty file, so `cat` itself succeeds)
    assert "Read-only file system" in slow.content and fast.is_error, (slow.content, fast.content)
    assert not (tmp_path / ".mcp.json").exists()


def test_repository_configured_programs_stay_inside_the_sandbox(tmp_path, outside):
    subprocess_git_init(tmp_path)
    hostile = f"touch {outside}/fsmonitor-escaped; touch fsmonitor-ran; echo '[]'"
    with open(tmp_path / ".git" / "config", "a") as f:        # planted before the session, outside codeloop
        f.write(f"[core]\n\tfsmonitor = \"{hostile}\"\n")
    before = (tmp_path / ".git" / "config").read_bytes()
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, "git status --short; git config core.fsmonitor x")
    assert (tmp_path / "fsmonitor-ran").exists()                 # it ran — but contained
    assert os.listdir(outside) == [] and (tmp_path / ".git" / "config").read_bytes() == before
    assert "error" in text(res).lower() or res.is_error


def test_background_processes_die_with_the_call(tmp_path):
    import time
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, "(sleep 2; touch late) > /dev/null 2>&1 & echo started")
    assert "started" in text(res)
    time.sleep(3)      # not a timing assertion: waits past the point the orphan would have written
    assert not (tmp_path / "late").exists()
