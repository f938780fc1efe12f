"""Red team (issue 12): new escape attempts against the real bubblewrap sandbox.

Every hostile command runs only inside the sandbox, rooted in tmp_path (or a throwaway /var/tmp
folder from the `outside` fixture); the checks are made on the host afterwards, and only read
(`git config --get` prints a value, it never runs one). The only servers are in this test
process, on loopback or on a Unix socket. Gaps are kept as `xfail(strict=True)` with a reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import uuid

import pytest
from sandbox_helpers import make_sandbox, needs_bwrap, run_bash

pytestmark = needs_bwrap


def gap(reason: str):
    return pytest.mark.xfail(strict=True, reason=f"red team: {reason}")


def text(result) -> str:
    return result.content if not isinstance(result, Exception) else str(result)


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path):
    git("init", "-q", ".", cwd=tmp_path)
    for rel, content in PROTECTED.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    return tmp_path


# ctypes prologue for raw mount(2)/umount2(2) calls (MS_BIND=4096, MS_REMOUNT=32, MNT_DETACH=2)
_MOUNT_PY = ("import ctypes, os; l = ctypes.CDLL(None, use_errno=True); "
             "os.makedirs('/tmp/r', exist_ok=True); ")

PROTECTED = {".git/hooks/pre-commit": "#!/bin/sh\nexit 0\n", ".mcp.json": "{}\n",
             ".claude/settings.json": "{}\n", ".codeloop/settings.json": "{}\n", "home/.bashrc": "# rc\n"}


def snapshot(root):
    files = {rel: (root / rel).read_bytes() for rel in [*PROTECTED, ".git/config"]}
    return files, sorted(os.listdir(root / ".git" / "hooks"))


# -- protected files through other names and other namespaces ------------------------------------
HOSTILE = [
    "echo evil >> /proc/self/root$PWD/.git/config",
    "echo evil >> /proc/self/cwd/.git/config",
    "echo evil >> /proc/1/cwd/.git/config",
    "cd /proc/self/cwd/.git/hooks && echo evil > post-checkout",
    "exec 3>>.git/config; echo evil >&3",
    "TMPDIR=$PWD/.git/hooks mktemp; TMPDIR=$PWD/.git/hooks mktemp -t pre-commitXXX",
    "ln .git/config hl; echo evil >> hl",
    "ln -s .git/config sl; echo evil >> sl; ln -s .git/hooks hk; echo evil > hk/pre-push",
    "mv .git/config .git/config.old; echo evil > .git/config",
    "mv .git/hooks .git/hooks.old; mkdir .git/hooks; echo evil > .git/hooks/pre-commit",
    "mv .git .git2; mkdir .git; echo evil > .git/config",
    "cp -a . ../copy 2>/dev/null; rm -rf .git/hooks/* ; echo evil > .git/hooks/pre-commit",
    "rm -rf .claude; mkdir .claude; echo '{}' > .claude/settings.local.json",
    "mv home home2; mkdir home; echo evil > home/.bashrc",
    "unshare -Urm sh -c 'mount -o remount,rw,bind .git/config; echo evil >> .git/config'",
    "unshare -Urm sh -c 'umount .git/config; echo evil >> .git/config'",
    "unshare -Urm sh -c 'mkdir -p /tmp/r && mount --bind \"$PWD\" /tmp/r && echo evil >> /tmp/r/.git/config'",
    "unshare -Urm sh -c 'mkdir -p /tmp/r && mount --rbind \"$PWD\" /tmp/r && umount -l /tmp/r/.git/config; "
    "echo evil >> /tmp/r/.git/config'",
    # no uid map (`-r` cannot write one here): still every capability inside the new namespaces
    "unshare -Um sh -c 'mount -o remount,rw,bind .git/config; umount .git/config; echo evil >> .git/config'",
    "unshare -Um sh -c 'mkdir -p /tmp/r && mount --bind \"$PWD\" /tmp/r && echo evil >> /tmp/r/.git/config'",
    "unshare -Um sh -c 'mkdir -p /tmp/r && mount --rbind \"$PWD\" /tmp/r && umount -l /tmp/r/.git/config; "
    "echo evil >> /tmp/r/.git/config'",
    "unshare -Um sh -c 'mount -t tmpfs t .git; echo evil > .git/config; mount --move .git /tmp'",
    # the same through the raw syscalls (mount(8) refuses an unmapped uid before trying)
    "unshare -Um python3 -c \"" + _MOUNT_PY + "l.umount2(b'.git/config', 2); "
    "print(l.mount(os.getcwd().encode(), b'/tmp/r', None, 4096, None), ctypes.get_errno()); "
    "open('/tmp/r/.git/config', 'a').write('evil'); open('.git/config', 'a').write('evil')\"",
    "unshare -Um python3 -c \"" + _MOUNT_PY
    + "l.mount(b'.git/config', b'.git/config', None, 4096 | 32 | 1 << 14, None); "
    "print(l.mount(None, b'.git/config', None, 4096 | 32, None), ctypes.get_errno()); "
    "open('.git/config', 'a').write('evil')\"",
    "python3 -c \"import os; fd=os.open('.git', os.O_RDONLY); "
    "os.rename('config', 'c2', src_dir_fd=fd, dst_dir_fd=fd)\"",
    "git config core.hooksPath /tmp; git config --file .git/config core.fsmonitor 'touch pwned'",
]


@pytest.mark.parametrize("command", HOSTILE)
def test_protected_files_stay_byte_identical(repo, command):
    before = snapshot(repo)
    run_bash(make_sandbox(repo), repo, command)
    assert snapshot(repo) == before
    assert not (repo / ".claude" / "settings.local.json").exists()
    assert not (repo / ".git2").exists() and not (repo / "home2").exists()


def test_a_missing_git_folder_cannot_be_planted_as_a_gitfile(tmp_path):
    [res] = run_bash(make_sandbox(tmp_path), tmp_path,
                     "mkdir -p evil/hooks; echo 'gitdir: evil' > .git; "
                     "mkdir -p .git/hooks; echo x > .git/hooks/pre-commit")
    assert not (tmp_path / ".git").exists()
    assert "Permission denied" in text(res) or "Read-only" in text(res) or res.is_error


def test_git_commondir_cannot_redirect_the_repository_config(repo):
    run_bash(make_sandbox(repo), repo,
             "mkdir -p evil/objects evil/refs && printf '[core]\\n\\tfsmonitor = touch pwned\\n' > evil/config"
             " && echo ../evil > .git/commondir")
    # read the effective config from the host; `git config --get` prints, it does not run the value
    assert "pwned" not in git("config", "--get", "core.fsmonitor", cwd=repo).stdout


def test_a_nested_repository_config_cannot_be_planted(repo):
    # planted.py takes it out after the call (the repository itself stays)
    run_bash(make_sandbox(repo), repo, "git init -q sub && git -C sub config core.fsmonitor 'touch pwned'")
    planted = git("config", "--get", "core.fsmonitor", cwd=repo / "sub").stdout if (repo / "sub").exists() else ""
    assert "pwned" not in planted


def test_home_xdg_git_config_is_protected_like_gitconfig(repo):
    run_bash(make_sandbox(repo), repo,
             "mkdir -p home/.config/git && printf '[core]\\n\\tfsmonitor = touch pwned\\n' > home/.config/git/config")
    assert not (repo / "home" / ".config" / "git" / "config").exists()


def test_writes_outside_through_proc_and_tmpdir_fail(tmp_path, outside):
    [res] = run_bash(make_sandbox(tmp_path), tmp_path,
                     f"echo x > /proc/self/root{outside}/a; echo x > /proc/1/root{outside}/b; "
                     f"TMPDIR={outside} mktemp; cd /proc/self/root{outside} && touch c; "
                     f"unshare -Urm sh -c 'mount --bind {outside} /mnt; touch /mnt/d; "
                     f"mount -o remount,rw {outside}; touch {outside}/e'")
    assert os.listdir(outside) == [] and res.is_error


def test_dev_shm_is_private(tmp_path):
    name = f"codeloop-red-{uuid.uuid4().hex}"
    run_bash(make_sandbox(tmp_path), tmp_path,
             f"mkdir -p /dev/shm; echo x > /dev/shm/{name}; echo y > /dev/mqueue/{name}")
    assert not os.path.exists(f"/dev/shm/{name}") and not os.path.exists(f"/dev/mqueue/{name}")


# -- masked (Read-denied) files ----------------------------------------------------------------------
def test_masked_file_cannot_be_read_through_proc_or_moved(tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id").write_text("TOPSECRET-9")
    sandbox = make_sandbox(tmp_path, deny_read=["./keys/id"])
    results = run_bash(sandbox, tmp_path, "cat /proc/self/root$PWD/keys/id", "cat /proc/1/cwd/keys/id",
                       "mv keys/id keys/id2; cat keys/id2", "cp --reflink=auto keys/id c; cat c",
                       "unshare -Urm sh -c 'umount keys/id; cat keys/id'",
                       "unshare -Urm sh -c 'mkdir -p /tmp/r && mount --bind \"$PWD\" /tmp/r && cat /tmp/r/keys/id'",
                       "unshare -Um sh -c 'umount keys/id; cat keys/id'",
                       "unshare -Um sh -c 'mkdir -p /tmp/r && mount --bind \"$PWD\" /tmp/r && cat /tmp/r/keys/id'",
                       "unshare -Um python3 -c \"" + _MOUNT_PY + "l.umount2(b'keys/id', 2); "
                       "l.mount(os.getcwd().encode(), b'/tmp/r', None, 4096, None); "
                       "print(open('keys/id').read()); print(open('/tmp/r/keys/id').read())\"")
    for r in results:
        assert "TOPSECRET" not in text(r)
    assert (tmp_path / "keys" / "id").read_text() == "TOPSECRET-9"


def test_denied_files_outside_the_roots_are_masked_too(tmp_path, outside, monkeypatch):
    monkeypatch.setenv("HOME", str(outside))
    (outside / ".aws").mkdir()
    (outside / ".aws" / "credentials").write_text("TOPSECRET-AWS")
    (outside / "id_rsa").write_text("TOPSECRET-SSH")
    os.symlink(outside / "id_rsa", tmp_path / "key-link")
    sandbox = make_sandbox(tmp_path, deny_read=["~/.aws/**", f"/{outside}/id_rsa"])
    results = run_bash(sandbox, tmp_path, "cat $HOME/.aws/credentials", f"cat {outside}/.aws/*",
                       "cat key-link", f"cp {outside}/id_rsa x; cat x", f"tar cf - -C {outside} . | strings",
                       f"cat /proc/self/root{outside}/id_rsa")
    for r in results:
        assert "TOPSECRET" not in text(r)


def test_renaming_the_folder_of_a_masked_file_does_not_unmask_it(tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id").write_text("TOPSECRET-8")
    sandbox = make_sandbox(tmp_path, deny_read=["./keys/id"])
    results = run_bash(sandbox, tmp_path, "mv keys k2; cat k2/id", "cat k2/id")
    for r in results:
        assert "TOPSECRET" not in text(r)


def test_renaming_the_folder_of_an_unanchored_masked_file_keeps_it_masked(tmp_path):
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / ".env").write_text("TOPSECRET-7")
    sandbox = make_sandbox(tmp_path, deny_read=[".env"])
    results = run_bash(sandbox, tmp_path, "mv deep d2; cat d2/er/.env", "cat d2/er/.env")
    for r in results:
        assert "TOPSECRET" not in text(r)


# -- network -------------------------------------------------------------------------------------------
def _serve_once(srv: socket.socket, payload: bytes) -> threading.Thread:
    def go():
        srv.settimeout(30)
        try:
            conn, _ = srv.accept()
            conn.sendall(payload)
            conn.close()
        except OSError:
            pass
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def _client(family: str, address: str) -> str:
    return (f"python3 -c \"import socket; s=socket.socket(socket.{family}); s.settimeout(5); "
            f"s.connect({address}); print(s.recv(100))\"")


def test_abstract_unix_sockets_of_the_host_are_unreachable(tmp_path):
    name = f"codeloop-red-{uuid.uuid4().hex}"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind("\0" + name)
    srv.listen(1)
    _serve_once(srv, b"HELLO-ABSTRACT")
    try:
        for block in ({}, {"network": {"allowedDomains": ["localhost"]}}):
            [res] = run_bash(make_sandbox(tmp_path, **block), tmp_path, _client("AF_UNIX", f"'\\\\0{name}'"))
            assert "HELLO-ABSTRACT" not in text(res) and res.is_error
    finally:
        srv.close()


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 here")
def test_ipv6_loopback_of_the_host_is_unreachable(tmp_path):
    srv = socket.socket(socket.AF_INET6)
    try:
        srv.bind(("::1", 0))
    except OSError as e:
        pytest.skip(f"cannot bind ::1 here: {e}")
    srv.listen(1)
    port = srv.getsockname()[1]
    _serve_once(srv, b"HELLO-V6")
    try:
        [res] = run_bash(make_sandbox(tmp_path), tmp_path, _client("AF_INET6", f"('::1', {port})"))
        assert "HELLO-V6" not in text(res) and res.is_error
    finally:
        srv.close()


def test_host_unix_socket_files_are_unreachable(tmp_path, outside):
    path = str(outside / "s.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)
    _serve_once(srv, b"HELLO-UNIX-FILE")
    try:
        [res] = run_bash(make_sandbox(tmp_path), tmp_path, _client("AF_UNIX", f"'{path}'"))
        assert "HELLO-UNIX-FILE" not in text(res)
    finally:
        srv.close()


def test_host_run_folder_is_hidden(tmp_path):
    if not os.path.isdir("/run") or os.path.islink("/run") or not os.access("/run", os.W_OK):
        pytest.skip("no writable real /run here")
    path = f"/run/codeloop-red-{uuid.uuid4().hex}.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)
    _serve_once(srv, b"HELLO-RUN")
    try:
        [res] = run_bash(make_sandbox(tmp_path), tmp_path, _client("AF_UNIX", f"'{path}'"))
        assert "HELLO-RUN" not in text(res) and res.is_error
    finally:
        srv.close()
        os.unlink(path)


def test_commondir_planted_in_a_call_is_gone_and_git_still_works(repo):
    [res] = run_bash(make_sandbox(repo), repo, "mkdir -p evil && echo ../evil > .git/commondir; git status --short")
    assert not (repo / ".git" / "commondir").exists()
    assert git("status", "--short", cwd=repo).returncode == 0


@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not installed")
def test_proxy_refuses_a_disallowed_address_whatever_the_host_header(tmp_path):
    # a server only on 127.0.0.2: `localhost` (allowed) cannot reach it, so getting its answer
    # would mean the proxy connected somewhere the allowlist does not name
    srv = socket.socket()
    try:
        srv.bind(("127.0.0.2", 0))
    except OSError as e:
        pytest.skip(f"cannot bind 127.0.0.2 here: {e}")
    srv.listen(4)
    port = srv.getsockname()[1]
    for _ in range(4):
        _serve_once(srv, b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nHELLO-127")
    sandbox = make_sandbox(tmp_path, network={"allowedDomains": ["localhost"]})
    raw = ("python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', 3128), 5); "
           "s.sendall(b'{line}\\r\\nHost: localhost:{port}\\r\\n\\r\\n'); print(s.recv(300))\"")
    try:
        results = run_bash(sandbox, tmp_path,
                           raw.format(line=f"GET http://127.0.0.2:{port}/ HTTP/1.1", port=port),
                           raw.format(line=f"CONNECT 127.0.0.2:{port} HTTP/1.1", port=port),
                           raw.format(line=f"GET http://localhost@127.0.0.2:{port}/ HTTP/1.1", port=port),
                           f"curl -sS --max-time 5 -H 'Host: localhost' http://127.0.0.2:{port}/")
        for r in results:
            assert "HELLO-127" not in text(r)
    finally:
        srv.close()
