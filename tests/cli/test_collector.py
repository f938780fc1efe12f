"""Issue 31: print mode's start-up runs without cyclic collections, and collecting resumes (with
start-up's objects frozen) once the session is open; a collector someone else turned off stays off."""

import gc
import json
import os
import subprocess
import sys

import pytest

from codeloop.cli.startup import collector


def test_pause_then_startup_done_freezes_and_collects_again():
    assert gc.isenabled()
    try:
        collector.pause()
        assert not gc.isenabled()
        kept = [[] for _ in range(10)]   # made during start-up
        collector.startup_done()
        assert gc.isenabled() and gc.get_freeze_count() > 0
        collector.startup_done()         # once only
        assert gc.isenabled()
        assert kept
    finally:
        gc.enable()
        gc.unfreeze()


def test_a_collector_turned_off_elsewhere_is_left_off():
    gc.disable()
    try:
        collector.pause()
        collector.startup_done()
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_resume_collects_again_without_freezing():
    assert gc.isenabled()
    try:
        collector.pause()
        assert not gc.isenabled()
        collector.resume()
        assert gc.isenabled() and gc.get_freeze_count() == 0
        collector.startup_done()    # nothing paused any more: nothing frozen
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
        gc.unfreeze()


def test_resume_leaves_a_collector_turned_off_elsewhere_off():
    gc.disable()
    try:
        collector.pause()
        collector.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()


# Runs codeloop's own entry (`main()` without argv, as `codeloop` does) and reports, as the process
# ends, whether the collector is on again and how many objects start-up left frozen.
_ENTRY = (
    "import gc, os, sys\n"
    "_exit = os._exit\n"
    "def _report(code):\n"
    "    sys.stderr.write(f'GC {gc.isenabled()} {gc.get_freeze_count()}\\n'); sys.stderr.flush(); _exit(code)\n"
    "os._exit = _report\n"
    "sys.argv = ['codeloop', *sys.argv[1:]]\n"
    "from codeloop.cli.main import main\n"
    "code = main()\n"
    "_report(code)\n")


@pytest.mark.parametrize("mode", ["print", "stream-json"])
def test_a_headless_run_collects_again_once_its_session_is_open(tmp_path, mode):
    from fakeapi import ScriptedAPI, sse, text

    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with ScriptedAPI(sse(text("done"))).serve() as url:
        env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=url)
        if mode == "print":
            args, stdin = ["-p", "hi", "--output-format", "json"], ""
        else:
            args = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
            stdin = json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n"
        proc = subprocess.run([sys.executable, "-c", _ENTRY, *args], input=stdin, cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stdout
    enabled, frozen = proc.stderr.rsplit("GC ", 1)[1].split()[:2]
    assert enabled == "True" and int(frozen) > 10_000   # start-up's objects, out of the collector's way
