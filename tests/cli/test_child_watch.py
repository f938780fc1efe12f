"""codeloop's own process watches its children with pidfds (cli.startup.child_watch), on every loop.

Each check runs in a fresh interpreter, as the CLI would: the watcher is process-wide state."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds are Linux's")

SCRIPT = textwrap.dedent("""
    import asyncio, os, sys, threading
    from codeloop.cli.startup import child_watch

    installed = child_watch.install()
    started = []
    real_start = threading.Thread.start
    def start(self):
        started.append(self.name)
        real_start(self)
    threading.Thread.start = start

    async def run(code):
        p = await asyncio.create_subprocess_exec("sh", "-c", f"echo hi; exit {code}",
                                                 stdout=asyncio.subprocess.PIPE)
        out, _ = await p.communicate()
        return p.returncode, out.decode().strip()

    async def many():
        return await asyncio.gather(*(run(i) for i in range(5)))

    main = asyncio.run(many())
    side = []
    t = threading.Thread(target=lambda: side.append(asyncio.run(run(3))), name="worker")
    t.start(); t.join()
    print(installed, main, side, [n for n in started if n != "worker"])
""")


def _run(extra: str = "") -> str:
    proc = subprocess.run([sys.executable, "-c", extra + SCRIPT], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_children_are_reaped_with_exit_codes_on_main_and_worker_loops_without_threads():
    out = _run()
    expected = "[(0, 'hi'), (1, 'hi'), (2, 'hi'), (3, 'hi'), (4, 'hi')] [(3, 'hi')]"
    if sys.version_info >= (3, 12):
        assert out.startswith("False " + expected)   # 3.12+ watches with pidfds itself
    else:
        assert out == f"True {expected} []"      # no waitpid thread for any of the six children


def test_a_pidfd_that_cannot_be_opened_falls_back_to_a_thread():
    # After install (which probes pidfd_open once), every later pidfd_open fails as on a kernel
    # or seccomp filter without it: the children are still reaped, each by a waitpid thread.
    refuse = textwrap.dedent("""
        import os
        from codeloop.cli.startup import child_watch as _cw
        _real_install = _cw.install
        def _install():
            ok = _real_install()
            def _no(pid, flags=0):
                raise OSError(38, "Function not implemented")
            os.pidfd_open = _no
            return ok
        _cw.install = _install
    """)
    out = _run(refuse)
    if sys.version_info >= (3, 12):
        pytest.skip("3.12+ keeps asyncio's own watcher")
    assert out.startswith("True [(0, 'hi'), (1, 'hi'), (2, 'hi'), (3, 'hi'), (4, 'hi')] [(3, 'hi')] [")
    assert out.count("asyncio-waitpid") == 6
