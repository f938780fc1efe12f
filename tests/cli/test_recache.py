"""cli.startup.recache: a pattern made from stored code is the pattern `re` makes (same code, same
matches); patterns that warn are never stored; a foreign, writable, corrupt or tampered file is
not trusted; the file keeps the patterns used most recently; codeloop's runs fill it."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cachefiles import UNTRUSTED, untrust

# Runs in a fresh interpreter: the cache installed on the folder argv[1], each pattern of argv[2]
# compiled through `re`, compared with what `re`'s own compile makes, the cache saved.
PROBE = textwrap.dedent("""
    import json, re, sys, warnings
    from codeloop.cli.startup import recache
    if len(sys.argv) > 3:
        recache.MAX_ENTRIES = int(sys.argv[3])
    recache.install(sys.argv[1])
    fresh = recache._state["compile"]
    out = []
    for text, flags, subject in json.loads(sys.argv[2]):
        pattern = text.encode() if subject.startswith("b:") else text
        subject = subject[2:].encode() if subject.startswith("b:") else subject
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            made = re.compile(pattern, flags)
        usual = fresh(pattern, flags)
        m, u = made.search(subject), usual.search(subject)
        out.append({"equal": made == usual, "hit": (pattern, flags) in recache._state["hits"],
                    "groups": made.groups, "groupindex": dict(made.groupindex), "flags": made.flags,
                    "match": None if m is None else [repr(g) for g in m.groups()] + [m.span()],
                    "usual_match": None if u is None else [repr(g) for g in u.groups()] + [u.span()],
                    "warnings": [str(w.category.__name__) for w in caught]})
        re.purge()   # the next run must compile again, not take re's own in-memory cache
    recache.save()
    print(json.dumps(out))
""")
PATTERNS = [
    [r"(?P<key>\w+)\s*=\s*(?P<value>[^#\n]*)", 0, "name = codeloop # x"],
    [r"^\s+def (\w+)\(", 8, "x\n    def run(self):"],           # re.MULTILINE
    [r"(?x) a  b+ \d{2,}  # spaces and a comment", 0, "zzabbb123"],
    [r"(?<=-)[a-z]+(?!\d)", 2, "x-ABc-d9"],                    # re.IGNORECASE
    [r"colou?r|gr[ae]y", 0, "the grey one"],
    [r"a.b", 16, "a\nb"],                                      # re.DOTALL
    [r"[\x00-\x1f]+(\d)", 0, "b:ab\x01\x02" + "7"],
    [r"(a)(b)?(?(2)c|d)", 0, "abc ad"],
]


def _run(cache: Path, patterns: list, max_entries: int | None = None) -> list[dict]:
    args = [sys.executable, "-c", PROBE, str(cache), json.dumps(patterns)]
    if max_entries is not None:
        args.append(str(max_entries))
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _file(cache: Path) -> Path:
    [stored] = cache.glob("regex-code.*")
    return stored


def _stored(cache: Path) -> dict:
    return marshal.loads(_file(cache).read_bytes())["code"]


def test_a_second_process_makes_the_same_patterns_from_stored_code(tmp_path):
    cache = tmp_path / "cache"
    first = _run(cache, PATTERNS)
    assert not any(r["hit"] for r in first)
    assert oct(_file(cache).stat().st_mode & 0o777) == "0o600"
    second = _run(cache, PATTERNS)
    assert all(r["hit"] for r in second)
    for a, b in zip(first, second):
        # Pattern equality compares pattern text, flags and the matcher's code
        assert b["equal"] and a["equal"]
        assert b["match"] == b["usual_match"] == a["match"] and b["match"] is not None
        assert (b["groups"], b["groupindex"], b["flags"]) == (a["groups"], a["groupindex"], a["flags"])


def test_patterns_that_warn_are_never_stored_and_warn_every_time(tmp_path):
    cache = tmp_path / "cache"
    warning = [[r"[[a-z]]+", 0, "b]"], [r"[0-9--]", 0, "-"], [r"[a&&b]", 0, "&"], [r"[a~~b]", 0, "~"]]
    for _ in range(2):
        out = _run(cache, warning + PATTERNS[:1])
        assert [r["warnings"] for r in out] == [["FutureWarning"]] * 4 + [[]]
        assert [r["hit"] for r in out[:4]] == [False] * 4
    stored = {k[0] for k in _stored(cache)}
    assert PATTERNS[0][0] in stored and not stored & {w[0] for w in warning}


@pytest.mark.parametrize("spoil", [*UNTRUSTED, "garbage", "other-python"])
def test_a_file_it_cannot_trust_or_read_is_not_used(tmp_path, spoil):
    cache = tmp_path / "cache"
    _run(cache, PATTERNS)
    stored = _file(cache)
    if spoil in UNTRUSTED:
        untrust(stored, spoil, tmp_path / "elsewhere")
    elif spoil == "garbage":
        stored.write_bytes(b"\xff" * 64)
    else:
        data = marshal.loads(stored.read_bytes())
        data["version"] = (data["version"][0], "2.7.18", *data["version"][2:])
        stored.write_bytes(marshal.dumps(data))
    out = _run(cache, PATTERNS)
    assert not any(r["hit"] for r in out)
    assert all(r["equal"] and r["match"] == r["usual_match"] for r in out)


def test_stored_code_the_matcher_refuses_is_compiled_again(tmp_path):
    """A tampered entry (code that is not valid matcher code, the wrong shape) is refused by
    `_sre.compile`'s own check: the pattern is compiled as usual and the entry replaced."""
    cache = tmp_path / "cache"
    _run(cache, PATTERNS[:2])
    stored = _file(cache)
    data = marshal.loads(stored.read_bytes())
    keys = [(p, f) for p, f, _ in PATTERNS[:2]]
    flags, code, groups, index, names = data["code"][keys[0]]
    data["code"][keys[0]] = (flags, b"\x07\x00\x00\x00" * (len(code) // 4), groups, index, names)
    data["code"][keys[1]] = ("not", "an entry")
    stored.write_bytes(marshal.dumps(data))
    out = _run(cache, PATTERNS[:2])
    assert [r["hit"] for r in out] == [False, False]
    assert all(r["equal"] and r["match"] == r["usual_match"] and r["match"] is not None for r in out)
    assert all(r["hit"] for r in _run(cache, PATTERNS[:2]))   # and the entries were written back right


def test_the_file_keeps_the_patterns_used_most_recently(tmp_path):
    cache = tmp_path / "cache"
    old = [[f"old{i}+", 0, f"old{i}"] for i in range(6)]
    _run(cache, old, max_entries=1000)
    assert {f"old{i}+" for i in range(6)} <= {k[0] for k in _stored(cache)}
    # A run that uses two of the old patterns and compiles new ones, with room for few entries:
    # the two it used and its new ones stay, the rest of the old go.
    out = _run(cache, old[:2] + [[f"new{i}+", 0, f"new{i}"] for i in range(3)], max_entries=5)
    assert [r["hit"] for r in out] == [True, True, False, False, False]
    assert {k[0] for k in _stored(cache)} == {"old0+", "old1+", "new0+", "new1+", "new2+"}


def test_codeloop_runs_fill_and_use_it(tmp_path):
    """A real `codeloop -p`: the first run stores the patterns start-up compiles, in the import
    cache's folder; the next runs answer the same, with the file unchanged (nothing new to add);
    `CODELOOP_IMPORT_CACHE=off` turns it off."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fakeapi import ScriptedAPI, sse, text

    home, shared = tmp_path / "home", tmp_path / "shared"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    api = ScriptedAPI(*[sse(text(f"answer {i}")) for i in range(4)])
    results, stamps, counts = [], [], []
    with api.serve() as url:
        env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=url, CODELOOP_CONFIG_DIR=str(home), HOME=str(home),
                   CODELOOP_IMPORT_CACHE=str(shared))
        for i in range(4):
            if i == 3:
                env["CODELOOP_IMPORT_CACHE"] = "off"
                _file(shared).unlink()
            proc = subprocess.run([sys.executable, "-m", "codeloop", "-p", "hi", "--output-format", "json"],
                                  cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            results.append(json.loads(proc.stdout)["result"])
            if i < 3:
                stamps.append(_file(shared).stat().st_mtime_ns)
                counts.append(len(_stored(shared)))
    assert results == [f"answer {i}" for i in range(4)]
    assert counts[0] >= 10 and counts[0] == counts[1] == counts[2]
    assert stamps[1] == stamps[2]   # the third run found every pattern stored: nothing written
    assert list(shared.glob("regex-code.*")) == [] and list(home.glob("cache/regex-code.*")) == []
