"""The local-model benchmark's tasks and their checks (run by bench_local.py).

Two fixed halves. TUNING (the first 17: the ten tasks the profile was first tuned on plus seven of
new shapes) is what prompt, schema and steering changes may be tried against. HELD_OUT (the next 16)
is only ever measured: no change may be made because of how a held-out task went, so its pass rate
says how the profile does on tasks nobody tuned it for. Two rounds of notes described HELD_OUT's
failures, and ideas taken from them reached the profile, so FRESH (the next 12, written on
2026-12-04 after the profile's last change) is a second held-out set: measure it, never read its
runs' transcripts while changing the profile, and retire it the same way once it has been looked
at. TUNING2 (the last 14, written on 2026-12-04 by the session that also added them to the tuning
side) is a second tuning set, because TUNING was nearly saturated: new shapes (rename a variable,
insert or comment out a line, words or lines counted, the longest file, names listed, files moved
or copied by kind or into a folder, a default in code, a syntax error, a line number, a script
made and run, which scripts are executable, the highest value) that changes may be tried against
freely. Its author knew which four FRESH tasks had failed (by name only), so its copy and
longest-file shapes are disclosed as written with that knowledge. Every check looks at the real
outcome: the files on disk afterwards (contents, existence, the executable bit, what a script
prints when run) or the names and numbers in the answer. TUNING3 (the last 8, written on
2026-12-04 for issue 29's fourth round) is a third tuning set: new files and words in the shapes
the last round named as failing (by name only: lines or files that match a word counted, an
existing file made executable, only the matching files listed, a function added, an off-by-one,
top-level functions counted, the largest file); changes may be tried against it freely.
FRESH2 (the last 12, written on 2026-12-05 by a session that did not change the profile that day;
the helper tuning the profile then never saw them) is a third held-out set of shapes no other set
has: an .ini value, what a function returns, empty files deleted, a program's output changed,
occurrences counted across files, a .gitignore, lines sorted, a bug fixed so a test passes, a
folder renamed, trailing spaces removed, table rows counted, a line put at the top. Measure it;
only its counts are read.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

Check = Callable[[str, Path], bool]


@dataclass
class Task:
    name: str
    prompt: str
    files: dict[str, str]
    check: Check
    modes: dict[str, int] = field(default_factory=dict)   # file -> permission bits to set before the run


def _has(*words: str) -> Check:
    return lambda answer, _d: all(w.lower() in answer.lower() for w in words)


def _numbers(answer: str) -> set[str]:
    return set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])", answer))


def _number(value: str, *, not_: tuple[str, ...] = ()) -> Check:
    """The answer states `value` as a number and none of the wrong totals in `not_`."""
    return lambda answer, _d: value in _numbers(answer) and not (_numbers(answer) & set(not_))


def _text(d: Path, path: str) -> str | None:
    try:
        return (d / path).read_text()
    except OSError:
        return None


def _file_has(path: str, *words: str, absent: tuple[str, ...] = ()) -> Check:
    def check(_a: str, d: Path) -> bool:
        text = _text(d, path)
        return text is not None and all(w in text for w in words) and not any(a in text for a in absent)
    return check


def _json_value(path: str, key: str, value: object, keep: dict) -> Check:
    def check(_a: str, d: Path) -> bool:
        try:
            data = json.loads((d / path).read_text())
        except (OSError, ValueError):
            return False
        return data.get(key) == value and all(data.get(k) == v for k, v in keep.items())
    return check


def _gone(path: str, *, keep: tuple[str, ...] = ()) -> Check:
    return lambda _a, d: not (d / path).exists() and all((d / k).is_file() for k in keep)


def _moved(src: str, dst: str, content: str) -> Check:
    return lambda _a, d: not (d / src).exists() and _text(d, dst) == content


def _runs(path: str, output: str, *, executable: bool = False, via: str = "") -> Check:
    """Running the file (directly, or with `via` such as python3) prints `output`."""
    def check(_a: str, d: Path) -> bool:
        f = d / path
        if not f.is_file() or (executable and not os.access(f, os.X_OK)):
            return False
        cmd = [via, str(f)] if via else [str(f)]
        try:
            proc = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return proc.returncode == 0 and output in proc.stdout
    return check


def _executable(path: str, content: str) -> Check:
    return lambda _a, d: os.access(d / path, os.X_OK) and _text(d, path) == content


def _no_word(path: str, word: str) -> Check:
    """`word` no longer occurs in the file as a whole word (a renamed name is gone everywhere)."""
    def check(_a: str, d: Path) -> bool:
        text = _text(d, path)
        return text is not None and not re.search(rf"\b{re.escape(word)}\b", text)
    return check


def _runs_code(d: Path, code: str, output: str, *, not_: tuple[str, ...] = ()) -> bool:
    """`python -c code` run in the task's folder prints `output` and none of `not_`."""
    try:
        proc = subprocess.run([sys.executable, "-c", code], cwd=d, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and output in proc.stdout and not any(n in proc.stdout for n in not_)


def _script_prints(path: str, output: str, *, not_: tuple[str, ...] = ()) -> Check:
    """Running the task's script `path` prints `output` and none of `not_`."""
    return lambda _a, d: _runs_code(d, f"import runpy; runpy.run_path({path!r})", output, not_=not_)


def _all(*checks: Check) -> Check:
    return lambda answer, d: all(c(answer, d) for c in checks)


PY = sys.executable  # the checks run scripts with this interpreter, not whatever python3 is

TUNING = [
    Task("read a value", "What is the value of PORT in config.ini?",
         {"config.ini": "[server]\nHOST=127.0.0.1\nPORT=8431\nWORKERS=3\n"}, _has("8431")),
    Task("fix a typo", "Fix the typo in greet.py: 'Helo' should be 'Hello'.",
         {"greet.py": 'def greet():\n    print("Helo, world")\n\n\ngreet()\n'},
         _file_has("greet.py", "Hello, world", "def greet", absent=("Helo,",))),
    Task("count lines", "How many lines does data.csv have?",
         {"data.csv": "id,name\n1,ann\n2,bob\n3,cy\n4,dee\n5,eve\n6,fay\n"}, _has("7")),
    Task("run a script", "Run compute.py with python3 and tell me the number it prints.",
         {"compute.py": "print(sum(range(1, 93)) - 36)\n"}, _has("4242")),
    Task("create a file", "Create a file named todo.txt containing the line: buy milk",
         {"README.md": "# shopping\n"}, _file_has("todo.txt", "buy milk")),
    Task("find a definition", "Which file defines the function parse_header?",
         {"app.py": "from parser_utils import parse_header\n\nprint(parse_header('a: b'))\n",
          "parser_utils.py": "def parse_header(line):\n    key, _, value = line.partition(':')\n"
                             "    return key.strip(), value.strip()\n",
          "helpers.py": "def tidy(s):\n    return s.strip()\n"}, _has("parser_utils.py")),
    Task("find a word", "Which file mentions the word zeppelin?",
         {"notes/sea.txt": "boats and ships\n", "notes/air.txt": "a zeppelin floated by\n",
          "notes/land.txt": "cars and trains\n"}, _has("air.txt")),
    Task("change a setting", 'In settings.json, set "debug" to true.',
         {"settings.json": '{\n  "name": "demo",\n  "debug": false,\n  "retries": 3\n}\n'},
         _json_value("settings.json", "debug", True, {"name": "demo", "retries": 3})),
    Task("name a class", "What is the name of the class defined in models.py?",
         {"models.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass InventoryItem:\n"
                       "    sku: str\n    count: int = 0\n"}, _has("InventoryItem")),
    Task("list files", "Which .md files are in the docs folder?",
         {"docs/intro.md": "# intro\n", "docs/usage.md": "# usage\n", "docs/logo.png": "png\n",
          "main.py": "print('hi')\n"}, _has("intro.md", "usage.md")),
    Task("rename in a file", "In maths.py, rename the function dbl to double, and update every call of it.",
         {"maths.py": "def dbl(n):\n    return n * 2\n\n\nprint(dbl(4))\nprint(dbl(dbl(1)))\n"},
         _all(_file_has("maths.py", "def double(n)", absent=("dbl",)), _runs("maths.py", "8\n4", via=PY))),
    Task("delete a file", "Delete the file temp.log.",
         {"temp.log": "debug output\n", "main.py": "print(1)\n"}, _gone("temp.log", keep=("main.py",))),
    Task("rename a file", "Rename draft.md to final.md.",
         {"draft.md": "# Plan\n\nship it\n"}, _moved("draft.md", "final.md", "# Plan\n\nship it\n")),
    Task("make a script", "Create a shell script run.sh that prints ready, and make it executable.",
         {"README.md": "# tools\n"}, _runs("run.sh", "ready", executable=True)),
    Task("count by kind", "How many .json files are in the config folder?",
         {"config/a.json": "{}\n", "config/b.json": "{}\n", "config/notes.txt": "x\n", "config/c.yaml": "a: 1\n",
          "config/d.yaml": "b: 2\n"}, _number("2", not_=("5", "3"))),
    Task("fix from a traceback",
         'python3 app.py fails with:\nTraceback (most recent call last):\n  File "app.py", line 2, in <module>\n'
         '    print("count: " + count)\nTypeError: can only concatenate str (not "int") to str\nFix app.py.',
         {"app.py": 'count = 5\nprint("count: " + count)\n'}, _runs("app.py", "count: 5", via=PY)),
    Task("answer from two files", "members.txt gives each person's team code and teams.txt names the teams. "
         "Which team is Dana in?",
         {"members.txt": "alice T1\nbob T2\ndana T3\nerin T1\n",
          "teams.txt": "T1 Falcons\nT2 Otters\nT3 Badgers\n"}, _has("Badgers")),
]

HELD_OUT = [
    Task("edit a value", "In app.cfg, change the timeout from 30 to 60.",
         {"app.cfg": "name = demo\ntimeout = 30\nretries = 2\n"},
         _file_has("app.cfg", "timeout = 60", "name = demo", "retries = 2", absent=("timeout = 30",))),
    Task("rename a function", "In shapes.py, rename the function area to rect_area, including where it is called.",
         {"shapes.py": "def area(w, h):\n    return w * h\n\n\ntotal = area(2, 3) + area(4, 5)\nprint(total)\n"},
         _all(_file_has("shapes.py", "def rect_area(w, h)"), _no_word("shapes.py", "area"),
              _runs("shapes.py", "26", via=PY))),
    Task("remove a file", "Delete old_notes.txt.",
         {"old_notes.txt": "stale\n", "notes.txt": "fresh\n"}, _gone("old_notes.txt", keep=("notes.txt",))),
    Task("move a file", "Move report.txt into the archive folder.",
         {"report.txt": "Q3 numbers\n", "archive/2023.txt": "old\n"},
         _moved("report.txt", "archive/report.txt", "Q3 numbers\n")),
    Task("chmod", "Make deploy.sh executable.",
         {"deploy.sh": "#!/bin/sh\necho deploying\n"}, _executable("deploy.sh", "#!/bin/sh\necho deploying\n"),
         modes={"deploy.sh": 0o644}),
    Task("new executable", "Write a Python script hello.py that prints hello world, and make it executable "
         "(it needs a shebang line).", {"README.md": "# demo\n"}, _runs("hello.py", "hello world", executable=True)),
    Task("count with a filter", "How many .txt files are in the logs folder?",
         {"logs/a.txt": "1\n", "logs/b.txt": "2\n", "logs/c.txt": "3\n", "logs/d.log": "4\n", "logs/e.log": "5\n",
          "logs/readme.md": "6\n"}, _number("3", not_=("6", "5"))),
    Task("list with a filter", "Which Python files in the src folder import os?",
         {"src/a.py": "import os\nprint(os.getcwd())\n", "src/b.py": "import sys\nprint(sys.argv)\n",
          "src/c.py": "import json\nimport os\n", "src/d.txt": "import os\n"},
         lambda a, _d: "a.py" in a and "c.py" in a and "b.py" not in a and "d.txt" not in a),
    Task("run and report", "Run stats.py and tell me the average it prints.",
         {"stats.py": "values = [12, 15, 21, 28]\nprint('average:', sum(values) / len(values))\n"}, _has("19")),
    Task("fix a NameError",
         "python3 calc.py fails with:\nTraceback (most recent call last):\n  File \"calc.py\", line 5, in <module>\n"
         "    print(mean([2, 4, 6]))\n  File \"calc.py\", line 2, in mean\n    return sum(xs) / len(x)\n"
         "NameError: name 'x' is not defined\nFix it.",
         {"calc.py": "def mean(xs):\n    return sum(xs) / len(x)\n\n\nprint(mean([2, 4, 6]))\n"},
         _runs("calc.py", "4.0", via=PY)),
    Task("join two files", "users.csv maps user ids to names and orders.csv lists orders by user id. "
         "Who placed order 1003?",
         {"users.csv": "id,name\n1,Ana\n2,Ben\n3,Chloe\n",
          "orders.csv": "order,user_id\n1001,2\n1002,1\n1003,3\n1004,2\n"}, _has("Chloe")),
    Task("toml value", "What version does pyproject.toml set?",
         {"pyproject.toml": '[project]\nname = "widget"\nversion = "2.7.1"\nrequires-python = ">=3.10"\n'},
         _has("2.7.1")),
    Task("copy a value", 'Create NAME.txt containing just the "name" value from package.json.',
         {"package.json": '{\n  "name": "lumen-ui",\n  "version": "0.3.0"\n}\n'}, _file_has("NAME.txt", "lumen-ui")),
    Task("append a line", "Add the line coverage>=7 at the end of requirements.txt.",
         {"requirements.txt": "pytest>=8\nrequests>=2\n"},
         _file_has("requirements.txt", "pytest>=8\nrequests>=2\n", "coverage>=7")),
    Task("which function raises", "Which function in utils.py raises ValueError?",
         {"utils.py": "def load(path):\n    return open(path).read()\n\n\ndef check_age(age):\n    if age < 0:\n"
                      "        raise ValueError('negative age')\n    return age\n\n\ndef shout(s):\n"
                      "    return s.upper()\n"}, _has("check_age")),
    Task("count matching lines", "How many lines of server.log contain ERROR?",
         {"server.log": "INFO start\nERROR disk\nINFO ok\nERROR net\nWARN slow\nERROR disk\nINFO stop\n"},
         _number("3", not_=("7",))),
]
FRESH = [
    Task("replace a word", "In motd.txt, replace the word Monday with Friday.",
         {"motd.txt": "Welcome back!\nThe office opens Monday at 9.\nBring coffee.\n"},
         _file_has("motd.txt", "The office opens Friday at 9.", "Welcome back!", "Bring coffee.",
                   absent=("Monday",))),
    Task("remove a line", "Remove the line containing DEBUG from settings.env.",
         {"settings.env": "HOST=0.0.0.0\nDEBUG=1\nPORT=5000\n"},
         _file_has("settings.env", "HOST=0.0.0.0", "PORT=5000", absent=("DEBUG",))),
    Task("make a folder", "Create a folder named build containing an empty file .keep.",
         {"Makefile": "all:\n\ttrue\n"}, lambda _a, d: (d / "build" / ".keep").is_file()),
    Task("copy a file", "Make a copy of config.yaml named config.backup.yaml.",
         {"config.yaml": "mode: fast\nlevel: 3\n"},
         _all(_file_has("config.yaml", "mode: fast\nlevel: 3\n"),
              _file_has("config.backup.yaml", "mode: fast\nlevel: 3\n"))),
    Task("largest file", "Which file in the data folder is the largest?",
         {"data/small.bin": "x" * 10, "data/huge.bin": "x" * 5000, "data/mid.bin": "x" * 700},
         lambda a, _d: "huge.bin" in a and "small.bin" not in a and "mid.bin" not in a),
    Task("sum a column", "What is the total of the amount column in sales.csv?",
         {"sales.csv": "item,amount\npen,12\nbook,30\nbag,45\n"}, _number("87", not_=("3",))),
    Task("add a function", "Add a function square(n) to mathx.py that returns n * n.",
         {"mathx.py": "def cube(n):\n    return n * n * n\n"},
         lambda _a, d: _file_has("mathx.py", "def cube(n)")(_a, d) and _runs_code(
             d, "import mathx; print(mathx.square(7), mathx.cube(2))", "49 8")),
    Task("fix an off-by-one", "count.py should print the numbers 1 to 5, one per line, but it stops at 4. Fix it.",
         {"count.py": "for i in range(1, 5):\n    print(i)\n"}, _runs("count.py", "1\n2\n3\n4\n5", via=PY)),
    Task("newest entry", "What is the date of the last entry in changelog.md?",
         {"changelog.md": "# Changes\n\n## 2024-01-10\n- first\n\n## 2024-03-02\n- second\n\n## 2024-05-19\n"
                          "- third\n"}, _has("2024-05-19")),
    Task("env var from a script", "What port does start.sh export?",
         {"start.sh": "#!/bin/sh\nexport APP_ENV=prod\nexport PORT=7311\nexec ./server\n"}, _has("7311")),
    Task("delete matching files", "Delete every .tmp file in the cache folder, and nothing else.",
         {"cache/a.tmp": "1\n", "cache/b.tmp": "2\n", "cache/keep.dat": "3\n", "cache/notes.txt": "4\n"},
         lambda _a, d: not list((d / "cache").glob("*.tmp")) and (d / "cache" / "keep.dat").is_file()
         and (d / "cache" / "notes.txt").is_file()),
    Task("count functions", "How many top-level functions (not methods) does tools.py define?",
         {"tools.py": "def a():\n    pass\n\n\ndef b(x):\n    return x\n\n\nclass C:\n    def m(self):\n"
                      "        pass\n\n\ndef d():\n    return 1\n"},
         _number("3", not_=("4", "5"))),
]
TUNING2 = [
    Task("rename a variable", "In report.py, rename the variable total to grand_total everywhere it is used.",
         {"report.py": 'total = 0\nfor n in [3, 4, 5]:\n    total += n\nprint("sum:", total)\n'},
         _all(_file_has("report.py", "grand_total += n"), _no_word("report.py", "total"),
              _runs("report.py", "sum: 12", via=PY))),
    Task("insert an import", "Add the line import logging at the top of worker.py.",
         {"worker.py": "def work():\n    return 1\n"},
         lambda _a, d: (_text(d, "worker.py") or "").startswith("import logging\n")
         and "def work():\n    return 1" in (_text(d, "worker.py") or "")),
    Task("comment out a line", "In main.py, comment out the line that prints debug.",
         {"main.py": 'print("start")\nprint("debug", 42)\nprint("end")\n'},
         _all(_file_has("main.py", "#", "debug"), _runs("main.py", "start\nend", via=PY))),
    Task("count words", "How many words are in poem.txt?",
         {"poem.txt": "the quick brown fox\njumps over the lazy\ndog at dawn today\n"},
         _number("12", not_=("3",))),
    Task("longest file", "Which .py file in the lib folder has the most lines?",
         {"lib/alpha.py": "a = 1\nb = 2\nc = 3\n", "lib/beta.py": "".join(f"v{i} = {i}\n" for i in range(9)),
          "lib/gamma.py": "x = 1\ny = 2\nz = 3\nw = 4\nq = 5\n", "lib/notes.txt": "n\n" * 20},
         lambda a, _d: "beta.py" in a and not any(w in a for w in ("alpha.py", "gamma.py", "notes.txt"))),
    Task("list functions", "What are the names of the functions defined in helpers.py?",
         {"helpers.py": "LIMIT = 10\n\n\ndef slugify(s):\n    return s.lower()\n\n\ndef clamp(n):\n"
                        "    return min(n, LIMIT)\n\n\ndef chunk(xs):\n    return [xs]\n"},
         _has("slugify", "clamp", "chunk")),
    Task("move by kind", "Move every .png file in this folder into the images folder.",
         {"a.png": "A\n", "b.png": "B\n", "c.txt": "C\n", "images/.keep": ""},
         lambda _a, d: _text(d, "images/a.png") == "A\n" and _text(d, "images/b.png") == "B\n"
         and not (d / "a.png").exists() and not (d / "b.png").exists() and (d / "c.txt").is_file()),
    Task("change a default", "In server.py, change the default port from 8000 to 9000.",
         {"server.py": 'def serve(host="localhost", port=8000):\n    return f"{host}:{port}"\n\n\n'
                       "print(serve())\n"}, _runs("server.py", "localhost:9000", via=PY)),
    Task("fix a syntax error",
         'python3 shout.py fails with:\n  File "shout.py", line 1\n    def shout(s)\n                ^\n'
         "SyntaxError: expected ':'\nFix it.",
         {"shout.py": 'def shout(s)\n    return s.upper() + "!"\n\n\nprint(shout("hey"))\n'},
         _runs("shout.py", "HEY!", via=PY)),
    Task("line of a definition", "On which line of app.py is the function main defined?",
         {"app.py": "import sys\n\nDEBUG = False\n\n\n# entry point\ndef main():\n    print(sys.argv)\n\n\n"
                    "main()\n"}, _number("7", not_=("11",))),
    Task("copy into a folder", "Copy logo.svg into the assets folder.",
         {"logo.svg": "<svg/>\n", "assets/style.css": "body {}\n"},
         lambda _a, d: _text(d, "logo.svg") == "<svg/>\n" and _text(d, "assets/logo.svg") == "<svg/>\n"),
    Task("make and run", "Create a Python script add.py that prints the sum of 17 and 25, run it, and tell me "
         "what it prints.", {"README.md": "# sums\n"},
         _all(_has("42"), _runs("add.py", "42", via=PY))),
    Task("which are executable", "Which of the scripts in the bin folder are executable?",
         {"bin/build.sh": "#!/bin/sh\necho b\n", "bin/clean.sh": "#!/bin/sh\necho c\n",
          "bin/test.sh": "#!/bin/sh\necho t\n"},
         lambda a, _d: "build.sh" in a and "test.sh" in a and ("clean.sh" not in a or bool(
             re.search(r"clean\.sh[^.;]*\bnot\b|\bnot\b[^.;]*clean\.sh", a))),
         modes={"bin/build.sh": 0o755, "bin/clean.sh": 0o644, "bin/test.sh": 0o755}),
    Task("highest value", "What is the highest score in scores.txt?",
         {"scores.txt": "ann 72\nbob 91\ncy 85\ndee 64\n"}, _number("91", not_=("72", "85", "64"))),
]
TUNING3 = [
    Task("lines with a word", "How many lines of journal.txt mention rain?",
         {"journal.txt": "Mon: sunny and warm\nTue: rain all day\nWed: cloudy\nThu: light rain at noon\n"
                         "Fri: windy\nSat: rain again\nSun: clear\n"}, _number("3", not_=("7",))),
    Task("files with a word", "How many files in the src folder mention logger?",
         {"src/a.py": "import logging\nlogger = logging.getLogger()\n", "src/b.py": "x = 1\n",
          "src/c.py": "from a import logger\nlogger.info('c')\n", "src/d.py": "def f():\n    return 2\n"},
         _number("2", not_=("4", "3"))),
    Task("make it runnable", "Make the existing script tools/backup.sh executable.",
         {"tools/backup.sh": "#!/bin/sh\necho backing up\n", "README.md": "# ops\n"},
         _executable("tools/backup.sh", "#!/bin/sh\necho backing up\n")),
    Task("only the matching", "Which .txt files in the notes folder mention budget?",
         {"notes/jan.txt": "budget review at 10\n", "notes/feb.txt": "team lunch\n",
          "notes/mar.txt": "the budget is approved\n", "notes/apr.md": "budget draft\n"},
         lambda a, _d: "jan.txt" in a and "mar.txt" in a and "feb.txt" not in a and "apr.md" not in a),
    Task("add a helper", "Add a function cube(n) that returns n cubed to powers.py.",
         {"powers.py": "def square(n):\n    return n * n\n"},
         lambda _a, d: _runs_code(d, "from powers import cube, square; print(cube(3), square(4))", "27 16")),
    Task("off by one", "pages.py should print the numbers 1 to 5 but stops at 4. Fix it.",
         {"pages.py": "for p in range(1, 5):\n    print(p)\n"},
         _script_prints("pages.py", "1\n2\n3\n4\n5\n", not_=("6",))),
    Task("top-level functions", "How many top-level functions are defined in geometry.py?",
         {"geometry.py": "import math\n\n\ndef circle(r):\n    return math.pi * r * r\n\n\nclass Box:\n"
                         "    def __init__(self, w):\n        self.w = w\n\n    def area(self):\n"
                         "        return self.w * self.w\n\n\ndef ring(a, b):\n    return circle(a) - circle(b)\n\n\n"
                         "def half(x):\n    return x / 2\n"}, _number("3", not_=("5", "2"))),
    Task("biggest file", "Which file in the data folder is the largest?",
         {"data/small.csv": "a,b\n1,2\n", "data/huge.csv": "a,b\n" + "".join(f"{i},{i * 7}\n" for i in range(40)),
          "data/mid.csv": "a,b\n" + "".join(f"{i},{i}\n" for i in range(8))},
         lambda a, _d: "huge.csv" in a and "small.csv" not in a and "mid.csv" not in a),
]
FRESH2 = [
    Task("ini value", "In settings.ini, set port to 9090.",
         {"settings.ini": "[server]\nhost = 127.0.0.1\nport = 8000\nworkers = 4\n"},
         _file_has("settings.ini", "port = 9090", "host = 127.0.0.1", "workers = 4", "[server]",
                   absent=("8000",))),
    Task("what it returns", "What does greet('Ann') return, according to hello.py?",
         {"hello.py": "def greet(name):\n    return 'Good day, ' + name.upper() + '!'\n"},
         _has("Good day, ANN!")),
    Task("empty files", "Delete the empty files in the logs folder; keep the others.",
         {"logs/a.log": "", "logs/b.log": "started\n", "logs/c.log": "", "logs/d.log": "stopped\n"},
         lambda _a, d: not (d / "logs/a.log").exists() and not (d / "logs/c.log").exists()
         and _text(d, "logs/b.log") == "started\n" and _text(d, "logs/d.log") == "stopped\n"),
    Task("change the output", "Make banner.py print Goodbye instead of Hello.",
         {"banner.py": "MESSAGE = 'Hello'\n\nprint(MESSAGE)\n"},
         _script_prints("banner.py", "Goodbye", not_=("Hello",))),
    Task("count occurrences", "How many TODO comments are there in the .py files of the app folder?",
         {"app/main.py": "# TODO: logging\nimport os\n# TODO: config\n", "app/util.py": "x = 1  # TODO: rename\n",
          "app/README.md": "TODO: write docs\n", "app/db.py": "def q():\n    return 0\n"},
         _number("3", not_=("2", "4"))),
    Task("ignore a kind", "Create a .gitignore file that makes git ignore all .log files.",
         {"main.py": "print(1)\n", "run.log": "x\n"},
         lambda _a, d: any(line.strip() in ("*.log", "/*.log", "**/*.log")
                           for line in (_text(d, ".gitignore") or "").splitlines())),
    Task("sort lines", "Sort the lines of names.txt alphabetically.",
         {"names.txt": "Mia\nAda\nZoe\nLeo\n"}, lambda _a, d: _text(d, "names.txt") in ("Ada\nLeo\nMia\nZoe\n",
                                                                                           "Ada\nLeo\nMia\nZoe")),
    Task("fix for a test", "test_prices.py fails. Fix the bug in prices.py so that it passes.",
         {"prices.py": "def with_tax(amount):\n    return amount * 0.2\n",
          "test_prices.py": "from prices import with_tax\n\n\ndef test_with_tax():\n"
                            "    assert with_tax(100) == 120\n"},
         lambda _a, d: _runs_code(d, "from prices import with_tax; print(with_tax(100) == 120, with_tax(50))",
                                  "True 60")
         and _file_has("test_prices.py", "assert with_tax(100) == 120")(_a, d)),
    Task("rename a folder", "Rename the folder old_docs to docs.",
         {"old_docs/intro.md": "# Intro\n", "old_docs/usage.md": "# Usage\n"},
         lambda _a, d: not (d / "old_docs").exists() and _text(d, "docs/intro.md") == "# Intro\n"
         and _text(d, "docs/usage.md") == "# Usage\n"),
    Task("trailing spaces", "Remove the trailing spaces from every line of report.txt.",
         {"report.txt": "total: 5   \nfailed: 0 \nskipped: 1\n"},
         lambda _a, d: (_text(d, "report.txt") or "").rstrip("\n") == "total: 5\nfailed: 0\nskipped: 1"),
    Task("rows in a table", "How many data rows (not counting the header) does people.csv have?",
         {"people.csv": "name,age\n" + "".join(f"p{i},{20 + i}\n" for i in range(11))},
         _number("11", not_=("12",))),
    Task("line at the top", "Put the line `version = 2` at the very top of app.cfg, keeping everything else.",
         {"app.cfg": "name = demo\nmode = fast\n"},
         lambda _a, d: (_text(d, "app.cfg") or "").startswith("version = 2\n")
         and "name = demo\nmode = fast" in (_text(d, "app.cfg") or "")),
]
TASKS = TUNING + HELD_OUT + FRESH + TUNING2 + TUNING3 + FRESH2
