"""The embedded model's one-time assembly as a user sees it (issue 34): a bar on a terminal, plain
lines off one, and an interrupted run — Ctrl-C or a kill — that leaves no model file to load and
is redone cleanly the next time. Tiny fake chunk packages on a tmp sys.path stand in for the model."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_local_model import PARTS, fake_packages, table_model

from codeloop.cli.startup.local_offer import progress_bar
from codeloop.providers.local_model import assemble, is_installed, part_path

WHOLE = b"".join(PARTS)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_progress_lines_when_stderr_is_no_terminal(tmp_path, monkeypatch):
    model = table_model(fake_packages(tmp_path, monkeypatch))
    err = io.StringIO()
    update, finish = progress_bar(err)
    assemble(model, tmp_path / "models", progress=update)
    finish()
    lines = err.getvalue().splitlines()
    assert lines and all(x.startswith("codeloop: preparing the local model: ") for x in lines)
    percents = [int(x.split(": ")[-1].split("%")[0]) for x in lines]
    assert percents == sorted(set(percents)) and percents[-1] == 100   # once each, in order, to the end
    assert "\x1b" not in err.getvalue() and "\r" not in err.getvalue()   # nothing a log file cannot hold


def test_plain_lines_every_ten_percent():
    err = io.StringIO()
    update, _ = progress_bar(err)
    for done in range(0, 1001, 7):
        update(done, 1000)
    update(1000, 1000)
    percents = [int(x.split(": ")[-1].split("%")[0]) for x in err.getvalue().splitlines()]
    assert percents == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]


def test_a_bar_on_a_terminal(tmp_path, monkeypatch):
    model = table_model(fake_packages(tmp_path, monkeypatch))
    err = Tty()
    update, finish = progress_bar(err)
    assemble(model, tmp_path / "models", progress=update)
    finish()
    drawn = err.getvalue()
    assert "preparing the local model" in drawn and "\x1b[" in drawn   # drawn in place, then cleared
    assert "codeloop: preparing" not in drawn


def test_ctrl_c_leaves_no_model_and_the_next_run_assembles(tmp_path, monkeypatch):
    model = table_model(fake_packages(tmp_path, monkeypatch))
    models = tmp_path / "models"

    def interrupt(done: int, total: int) -> None:
        if done < total:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        assemble(model, models, progress=interrupt)
    assert not (models / model.filename).exists() and not part_path(models / model.filename).exists()
    assert assemble(model, models).read_bytes() == WHOLE


KILLED_RUN = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from codeloop.providers.local_model import KnownModel, assemble
packages = tuple(sys.argv[5].split(","))
model = KnownModel("tiny-test", "tiny-test.gguf", int(sys.argv[3]), sys.argv[4], packages, "Tiny test model")

def stall(done, total):
    if done < total:
        Path(sys.argv[6]).write_text(str(done))   # part of the file is written: now kill me
        time.sleep(600)

assemble(model, Path(sys.argv[2]), progress=stall)
"""


def test_a_killed_assembly_leaves_no_model_and_is_redone(tmp_path, monkeypatch):
    packages = fake_packages(tmp_path, monkeypatch)
    model = table_model(packages)
    models, marker = tmp_path / "models", tmp_path / "stalled"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                         os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(tmp_path / "site"), str(models), str(model.size),
                             model.sha256, ",".join(packages), str(marker)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the assembly never started"
        proc.send_signal(signal.SIGKILL)   # no finally, no clean-up: as a power cut or the OOM killer
    finally:
        proc.kill()
        proc.wait()
    target = models / model.filename
    assert part_path(target).exists() and not target.exists()   # half a file, never under the model's name
    assert is_installed(model, models)   # still installable from the chunks
    seen: list[int] = []
    assert assemble(model, models, progress=lambda d, t: seen.append(d)).read_bytes() == WHOLE
    assert seen[-1] == model.size and not part_path(target).exists()


def test_leftovers_of_older_runs_are_discarded(tmp_path, monkeypatch):
    model = table_model(fake_packages(tmp_path, monkeypatch))
    models = tmp_path / "models"
    models.mkdir()
    stale = models / f".{model.filename}.4242.part"   # an older run's name for its temporary file
    stale.write_bytes(b"GGUF" + b"\0" * 10)
    (models / model.filename).write_bytes(WHOLE[: len(WHOLE) // 2])   # e.g. a copy cut short
    assert assemble(model, models).read_bytes() == WHOLE
    assert not stale.exists() and sorted(p.name for p in models.iterdir()) == [
        model.filename, f"{model.filename}.lock", f"{model.filename}.verified"]
