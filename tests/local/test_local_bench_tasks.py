"""The local benchmark's tasks and checks (bench/local_tasks.py), without a model: every check
fails on the files as the task starts, passes on a correct outcome, and the split is fixed."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


tasks = _load("local_tasks")


def _setup(task, d: Path) -> Path:
    for rel, text in task.files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    for rel, mode in task.modes.items():
        (d / rel).chmod(mode)
    return d


def test_the_split_is_fixed_and_large_enough():
    assert len(tasks.TASKS) >= 30 and tasks.TASKS == (tasks.TUNING + tasks.HELD_OUT + tasks.FRESH + tasks.TUNING2
                                                     + tasks.TUNING3 + tasks.FRESH2)
    assert len(tasks.TUNING) == 17 and len(tasks.HELD_OUT) == 16 and len(tasks.FRESH) == 12
    assert len(tasks.TUNING2) == 14 and len(tasks.TUNING3) == 8 and len(tasks.FRESH2) == 12
    names = [t.name for t in tasks.TASKS]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("task", tasks.TASKS, ids=lambda t: t.name)
def test_no_check_passes_before_the_work_is_done(task, tmp_path):
    assert not task.check("", _setup(task, tmp_path))


def _done(d: Path, name: str) -> Path:
    """A correct outcome for a few tasks of each kind of check, done by hand."""
    if name == "rename a function":
        (d / "shapes.py").write_text((d / "shapes.py").read_text().replace("area(", "rect_area("))
    elif name == "remove a file":
        (d / "old_notes.txt").unlink()
    elif name == "move a file":
        os.replace(d / "report.txt", d / "archive" / "report.txt")
    elif name == "chmod":
        (d / "deploy.sh").chmod(0o755)
    elif name == "new executable":
        (d / "hello.py").write_text("#!/usr/bin/env python3\nprint('hello world')\n")
        (d / "hello.py").chmod(0o755)
    elif name == "fix a NameError":
        (d / "calc.py").write_text((d / "calc.py").read_text().replace("len(x)", "len(xs)"))
    elif name == "append a line":
        with (d / "requirements.txt").open("a") as f:
            f.write("coverage>=7\n")
    elif name == "replace a word":
        (d / "motd.txt").write_text((d / "motd.txt").read_text().replace("Monday", "Friday"))
    elif name == "remove a line":
        (d / "settings.env").write_text("HOST=0.0.0.0\nPORT=5000\n")
    elif name == "make a folder":
        (d / "build").mkdir()
        (d / "build" / ".keep").write_text("")
    elif name == "copy a file":
        (d / "config.backup.yaml").write_text((d / "config.yaml").read_text())
    elif name == "add a function":
        with (d / "mathx.py").open("a") as f:
            f.write("\n\ndef square(n):\n    return n * n\n")
    elif name == "fix an off-by-one":
        (d / "count.py").write_text("for i in range(1, 6):\n    print(i)\n")
    elif name == "delete matching files":
        for f in (d / "cache").glob("*.tmp"):
            f.unlink()
    elif name == "rename a variable":
        (d / "report.py").write_text((d / "report.py").read_text().replace("total", "grand_total"))
    elif name == "insert an import":
        (d / "worker.py").write_text("import logging\n" + (d / "worker.py").read_text())
    elif name == "comment out a line":
        (d / "main.py").write_text((d / "main.py").read_text().replace('print("debug"', '# print("debug"'))
    elif name == "move by kind":
        for f in ("a.png", "b.png"):
            os.replace(d / f, d / "images" / f)
    elif name == "change a default":
        (d / "server.py").write_text((d / "server.py").read_text().replace("8000", "9000"))
    elif name == "fix a syntax error":
        (d / "shout.py").write_text((d / "shout.py").read_text().replace("def shout(s)", "def shout(s):"))
    elif name == "copy into a folder":
        (d / "assets" / "logo.svg").write_text((d / "logo.svg").read_text())
    elif name == "make and run":
        (d / "add.py").write_text("print(17 + 25)\n")
    elif name == "ini value":
        (d / "settings.ini").write_text((d / "settings.ini").read_text().replace("8000", "9090"))
    elif name == "empty files":
        (d / "logs" / "a.log").unlink()
        (d / "logs" / "c.log").unlink()
    elif name == "change the output":
        (d / "banner.py").write_text((d / "banner.py").read_text().replace("Hello", "Goodbye"))
    elif name == "ignore a kind":
        (d / ".gitignore").write_text("*.log\n")
    elif name == "sort lines":
        (d / "names.txt").write_text("".join(sorted((d / "names.txt").read_text().splitlines(True))))
    elif name == "fix for a test":
        (d / "prices.py").write_text("def with_tax(amount):\n    return amount * 1.2\n")
    elif name == "rename a folder":
        os.replace(d / "old_docs", d / "docs")
    elif name == "trailing spaces":
        (d / "report.txt").write_text("".join(line.rstrip() + "\n" for line in (d / "report.txt").open()))
    elif name == "line at the top":
        (d / "app.cfg").write_text("version = 2\n" + (d / "app.cfg").read_text())
    return d


ANSWERS = {"count with a filter": "There are 3 .txt files in logs.",
           "list with a filter": "src/a.py and src/c.py import os.",
           "count matching lines": "3 lines contain ERROR.",
           "join two files": "Order 1003 was placed by Chloe (user 3).",
           "largest file": "data/huge.bin is the largest (5000 bytes).",
           "sum a column": "The amounts add up to 87.",
           "newest entry": "The last entry is dated 2024-05-19.",
           "env var from a script": "start.sh exports PORT=7311.",
           "count functions": "tools.py defines 3 top-level functions: a, b and d.",
           "count words": "poem.txt has 12 words.",
           "longest file": "lib/beta.py has the most lines (9).",
           "list functions": "helpers.py defines slugify, clamp and chunk.",
           "line of a definition": "main is defined on line 7 of app.py.",
           "make and run": "add.py prints 42.",
           "which are executable": "build.sh and test.sh are executable; clean.sh is not.",
           "highest value": "The highest score is 91 (bob).",
           "what it returns": "greet('Ann') returns 'Good day, ANN!'.",
           "count occurrences": "There are 3 TODO comments in the .py files.",
           "rows in a table": "people.csv has 11 data rows."}
DONE = ("rename a function", "remove a file", "move a file", "chmod", "new executable", "fix a NameError",
        "append a line", "replace a word", "remove a line", "make a folder", "copy a file", "add a function",
        "fix an off-by-one", "delete matching files", "rename a variable", "insert an import",
        "comment out a line", "move by kind", "change a default", "fix a syntax error", "copy into a folder",
        "make and run", "ini value", "empty files", "change the output", "ignore a kind", "sort lines",
        "fix for a test", "rename a folder", "trailing spaces", "line at the top")


@pytest.mark.parametrize("name", [*DONE, *ANSWERS])
def test_a_correct_outcome_passes(name, tmp_path):
    task = next(t for t in tasks.TASKS if t.name == name)
    assert task.check(ANSWERS.get(name, ""), _done(_setup(task, tmp_path), name))


def test_wrong_counts_and_half_done_work_fail(tmp_path):
    count = next(t for t in tasks.TASKS if t.name == "count with a filter")
    assert not count.check("There are 6 files in logs, 3 of them .txt", tmp_path)  # counted every kind
    listing = next(t for t in tasks.TASKS if t.name == "list with a filter")
    assert not listing.check("a.py, b.py and c.py", tmp_path)
    rename = next(t for t in tasks.TASKS if t.name == "rename a function")
    d = _setup(rename, tmp_path / "r")
    (d / "shapes.py").write_text((d / "shapes.py").read_text().replace("def area", "def rect_area"))
    assert not rename.check("", d)  # the calls still use the old name


def test_fresh_tasks_fail_half_done_work(tmp_path):
    def named(name):
        return next(t for t in tasks.FRESH if t.name == name)
    d = _setup(named("delete matching files"), tmp_path / "del")
    for f in (d / "cache").iterdir():
        f.unlink()                                        # deleted everything, not only the .tmp files
    assert not named("delete matching files").check("", d)
    d = _setup(named("copy a file"), tmp_path / "cp")
    os.replace(d / "config.yaml", d / "config.backup.yaml")  # moved, not copied
    assert not named("copy a file").check("", d)
    d = _setup(named("add a function"), tmp_path / "fn")
    (d / "mathx.py").write_text("def square(n):\n    return n * n\n")   # cube lost
    assert not named("add a function").check("", d)
    assert not named("largest file").check("huge.bin, mid.bin and small.bin", tmp_path)
    assert not named("count functions").check("4 functions: a, b, C.m and d", tmp_path)


def test_tuning2_tasks_fail_half_done_work(tmp_path):
    def named(name):
        return next(t for t in tasks.TUNING2 if t.name == name)
    d = _setup(named("rename a variable"), tmp_path / "var")
    (d / "report.py").write_text((d / "report.py").read_text().replace("total = 0", "grand_total = 0"))
    assert not named("rename a variable").check("", d)   # the uses keep the old name
    d = _setup(named("copy into a folder"), tmp_path / "cp")
    os.replace(d / "logo.svg", d / "assets" / "logo.svg")   # moved, not copied
    assert not named("copy into a folder").check("", d)
    assert not named("which are executable").check("build.sh, clean.sh and test.sh", tmp_path)
    assert not named("longest file").check("notes.txt has the most lines", tmp_path)
    assert not named("count words").check("3 lines, 12 words", tmp_path)


def test_an_answer_that_copies_tool_output_fails():
    bench = _load("bench_local")
    assert bench.copies_tool_output("The file a.py has been updated. Here's the result of running `cat -n` on it")
    assert not bench.copies_tool_output("Renamed dbl to double in maths.py.")
