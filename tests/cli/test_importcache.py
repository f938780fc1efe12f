"""cli.startup.importcache: modules served from the stored code come out as the usual import makes
them; a changed source, a module planted earlier on sys.path, a foreign, writable, linked or
corrupt file each fall back to the usual import; and codeloop's own runs fill and use the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cachefiles import UNTRUSTED, untrust

# Runs in a fresh interpreter: sys.path = [the probe's folders…, the interpreter's own], the cache
# installed, the probe package imported, what the import made printed as JSON, the cache saved.
PROBE = textwrap.dedent("""
    import importlib, inspect, json, os, sys, traceback
    front = json.loads(sys.argv[2])
    sys.path[:0] = front
    from codeloop.cli.startup import importcache
    importcache.install(sys.argv[1])
    out = {}
    for name in json.loads(sys.argv[3]):
        m = importlib.import_module(name)
        out[name] = {"file": m.__file__, "cached": m.__cached__, "path": getattr(m, "__path__", None),
                     "package": m.__package__, "value": getattr(m, "VALUE", None),
                     "served": type(m.__spec__.loader).__name__ == "_Loader",
                     "loader_is_source": isinstance(m.__spec__.loader, importlib.machinery.SourceFileLoader),
                     "source_line": inspect.getsource(m).splitlines()[0]}
    try:
        importlib.import_module("probe_pkg.fails").boom()
    except ZeroDivisionError as exc:
        out["trace"] = traceback.format_exception(exc)[-2]
    importcache.save()
    print(json.dumps(out))
""")
MODULES = ["probe_pkg", "probe_pkg.inner", "probe_pkg.fails", "probe_top"]


def _tree(root: Path) -> Path:
    lib = root / "lib"
    (lib / "probe_pkg").mkdir(parents=True)
    (lib / "probe_pkg" / "__init__.py").write_text("'''the package'''\nVALUE = 'pkg'\n")
    (lib / "probe_pkg" / "inner.py").write_text("'''inner'''\nVALUE = 'inner'\n")
    (lib / "probe_pkg" / "fails.py").write_text("def boom():\n    return 1 / 0   # the line a traceback shows\n")
    (lib / "probe_top.py").write_text("'''top'''\nVALUE = 'top'\n")
    return lib


def _run(cache: Path, front: list[Path], modules: list[str] = MODULES) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}   # .pyc files are written
    proc = subprocess.run([sys.executable, "-c", PROBE, str(cache), json.dumps([str(p) for p in front]),
                           json.dumps(modules)], capture_output=True, text=True, env=env, cwd=str(cache.parent))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _files(cache: Path) -> list[Path]:
    return sorted(cache.glob("import-code.*")) if cache.exists() else []


def test_a_second_process_is_served_the_same_modules(tmp_path):
    lib = _tree(tmp_path)
    cache = tmp_path / "cache"
    first = _run(cache, [lib])
    assert not any(first[m]["served"] for m in MODULES)
    assert len(_files(cache)) == 1 and oct(_files(cache)[0].stat().st_mode & 0o777) == "0o600"
    second = _run(cache, [lib])
    assert all(second[m]["served"] for m in MODULES)
    for m in MODULES:   # everything else exactly as the usual import made it
        assert {k: v for k, v in second[m].items() if k != "served"} == \
            {k: v for k, v in first[m].items() if k != "served"}
    assert second["probe_pkg"]["path"] == [str(lib / "probe_pkg")]
    assert second["probe_pkg.inner"]["value"] == "inner" and second["probe_pkg"]["loader_is_source"]
    assert "return 1 / 0" in second["trace"] and str(lib / "probe_pkg" / "fails.py") in second["trace"]
    assert second["trace"] == first["trace"]


def test_a_changed_source_is_imported_not_its_stored_code(tmp_path):
    lib = _tree(tmp_path)
    cache = tmp_path / "cache"
    _run(cache, [lib])
    (lib / "probe_pkg" / "inner.py").write_text("'''inner'''\nVALUE = 'changed'\n")
    again = _run(cache, [lib])
    assert again["probe_pkg.inner"] == {**again["probe_pkg.inner"], "value": "changed", "served": False}
    assert again["probe_top"]["served"]
    third = _run(cache, [lib])    # the new code was stored when that run ended
    assert third["probe_pkg.inner"]["value"] == "changed" and third["probe_pkg.inner"]["served"]


def test_a_same_size_change_within_the_second_is_not_served(tmp_path):
    # the stored code is checked at nanoseconds, so the import goes the usual way (whose .pyc
    # check, at whole seconds, is Python's own business)
    lib = _tree(tmp_path)
    cache = tmp_path / "cache"
    _run(cache, [lib])
    assert _run(cache, [lib])["probe_top"]["served"]
    target = lib / "probe_top.py"
    before = target.stat()
    target.write_text("'''top'''\nVALUE = 'TOP'\n")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    out = _run(cache, [lib])
    assert not out["probe_top"]["served"] and out["probe_pkg"]["served"]


def test_a_module_planted_earlier_on_sys_path_wins(tmp_path):
    lib = _tree(tmp_path)
    early = tmp_path / "early"
    early.mkdir()
    cache = tmp_path / "cache"
    _run(cache, [early, lib])
    assert _run(cache, [early, lib])["probe_top"]["served"]
    (early / "probe_top.py").write_text("VALUE = 'planted'\n")
    (early / "probe_pkg").mkdir()
    (early / "probe_pkg" / "__init__.py").write_text("VALUE = 'planted pkg'\n")
    (early / "probe_pkg" / "inner.py").write_text("VALUE = 'planted inner'\n")
    (early / "probe_pkg" / "fails.py").write_text("def boom():\n    return 1 / 0\n")
    out = _run(cache, [early, lib])
    assert (out["probe_top"]["value"], out["probe_pkg"]["value"], out["probe_pkg.inner"]["value"]) == \
        ("planted", "planted pkg", "planted inner")
    assert not any(out[m]["served"] for m in MODULES)


def test_a_package_whose_path_changed_imports_as_usual(tmp_path):
    lib = _tree(tmp_path)
    other = tmp_path / "other"
    (other / "probe_pkg").mkdir(parents=True)
    (other / "probe_pkg" / "inner.py").write_text("VALUE = 'other inner'\n")
    cache = tmp_path / "cache"
    _run(cache, [lib])
    (lib / "probe_pkg" / "__init__.py").write_text(
        f"VALUE = 'pkg'\n__path__.insert(0, {str(other / 'probe_pkg')!r})\n")
    assert _run(cache, [lib])["probe_pkg.inner"]["value"] == "other inner"


@pytest.mark.parametrize("spoil", [*UNTRUSTED, "corrupt", "truncated"])
def test_a_file_it_cannot_trust_or_read_is_not_used(tmp_path, spoil):
    lib = _tree(tmp_path)
    cache = tmp_path / "cache"
    _run(cache, [lib])
    [stored] = _files(cache)
    if spoil in UNTRUSTED:
        untrust(stored, spoil, tmp_path / "elsewhere")
    elif spoil == "corrupt":
        data = bytearray(stored.read_bytes())
        data[16:48] = b"\xff" * 32
        stored.write_bytes(bytes(data))
    else:
        stored.write_bytes(stored.read_bytes()[:40])
    out = _run(cache, [lib])
    assert not any(out[m]["served"] for m in MODULES)
    assert [out[m]["value"] for m in ("probe_pkg", "probe_pkg.inner", "probe_top")] == ["pkg", "inner", "top"]


def test_stored_code_that_no_longer_reads_falls_back_to_the_source(tmp_path):
    lib = _tree(tmp_path)
    cache = tmp_path / "cache"
    _run(cache, [lib])
    [stored] = _files(cache)
    data = stored.read_bytes()
    stored.write_bytes(data[:-200])   # the last module's code cut short: read fails, source used
    out = _run(cache, [lib])
    assert [out[m]["value"] for m in ("probe_pkg", "probe_pkg.inner", "probe_top")] == ["pkg", "inner", "top"]


def test_each_sys_path_has_its_own_file(tmp_path):
    lib = _tree(tmp_path)
    extra = tmp_path / "extra"
    extra.mkdir()
    cache = tmp_path / "cache"
    _run(cache, [lib])
    out = _run(cache, [extra, lib])
    assert not out["probe_top"]["served"] and len(_files(cache)) == 2
    assert _run(cache, [lib])["probe_top"]["served"]


def test_the_working_folders_own_modules_are_never_stored(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "probe_top.py").write_text("VALUE = 'project'\n")
    lib = _tree(tmp_path)
    cache = project / "cache"
    _run(cache, [Path(""), lib], ["probe_pkg", "probe_top"])
    out = _run(cache, [Path(""), lib], ["probe_pkg", "probe_top"])
    assert out["probe_top"] == {**out["probe_top"], "value": "project", "served": False}
    assert out["probe_pkg"]["served"]


def test_codeloop_runs_fill_and_use_it(tmp_path):
    """A real `codeloop -p` against the fake API: the first run writes the file, the next starts
    with it installed and answers the same; a broken file changes nothing but the speed."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fakeapi import ScriptedAPI, sse, text

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    api = ScriptedAPI(*[sse(text(f"answer {i}")) for i in range(3)])
    results = []
    with api.serve() as url:
        env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=url, CODELOOP_CONFIG_DIR=str(home), HOME=str(home))
        for i in range(3):
            if i == 2:
                for f in _files(home / "cache"):
                    f.write_bytes(b"clImpC1\n" + b"\xff" * 64)
            proc = subprocess.run([sys.executable, "-m", "codeloop", "-p", "hi", "--output-format", "json"],
                                  cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            results.append(json.loads(proc.stdout)["result"])
            if i == 0:
                assert len(_files(home / "cache")) == 1
    assert results == ["answer 0", "answer 1", "answer 2"]


@pytest.mark.parametrize("setting", ["folder", "off"])
def test_codeloop_import_cache_names_the_folder_or_turns_it_off(tmp_path, setting):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fakeapi import ScriptedAPI, sse, text

    home, shared = tmp_path / "home", tmp_path / "shared"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    with ScriptedAPI(sse(text("ok"))).serve() as url:
        env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=url, CODELOOP_CONFIG_DIR=str(home), HOME=str(home),
                   CODELOOP_IMPORT_CACHE=str(shared) if setting == "folder" else "off")
        proc = subprocess.run([sys.executable, "-m", "codeloop", "-p", "hi", "--output-format", "json"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout)["result"] == "ok", proc.stderr
    assert _files(home / "cache") == []
    assert len(_files(shared)) == (1 if setting == "folder" else 0)


@pytest.mark.parametrize("changed", [False, True])
def test_a_source_changed_while_the_file_is_written_stops_the_write(tmp_path, monkeypatch, changed):
    import importlib
    import importlib.util
    import py_compile

    from codeloop.cli.startup import importcache

    lib, cache = tmp_path / "lib", tmp_path / "cache"
    lib.mkdir()
    source = lib / "probe_late.py"
    source.write_text("VALUE = 'late'\n")
    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    monkeypatch.setattr(sys, "path", [str(lib), *sys.path])
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(importcache, "_state", {"finder": None, "folder": None})
    monkeypatch.delitem(sys.modules, "probe_late", raising=False)
    importcache.install(str(cache))          # nothing stored yet: the usual import, from the .pyc
    assert importlib.import_module("probe_late").VALUE == "late"
    real_write = importcache.write_own_file

    def write(path, chunks):
        if changed:   # between the plan and the write: same size, same second (the .pyc still matches)
            before = source.stat()
            source.write_text("VALUE = 'LATE'\n")
            os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
        real_write(path, chunks)

    monkeypatch.setattr(importcache, "write_own_file", write)
    importcache.save()
    sys.modules.pop("probe_late", None)
    assert len(_files(cache)) == (0 if changed else 1)   # stopped: no file made of mismatched code
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")] if cache.exists() else True


@pytest.mark.parametrize("damage", ["short entry", "not code"])
def test_a_damaged_entry_of_a_valid_file_falls_back_and_is_replaced(tmp_path, damage):
    """The file reads, its key matches, but one module's entry is cut short or its stored code is
    no code object (a damaged file): that module is imported from its source, the others are
    served, and the next save replaces the entry, so the run after serves it again."""
    import marshal

    lib = _tree(tmp_path)
    cache = tmp_path / "cache"
    _run(cache, [lib])
    [stored] = _files(cache)
    data = stored.read_bytes()
    head_len = int.from_bytes(data[8:16], "little")
    head = marshal.loads(data[16:16 + head_len])
    blob = bytearray(data[16 + head_len:])
    entry = head["index"]["probe_top"]
    if damage == "short entry":
        head["index"]["probe_top"] = entry[:6]
    else:   # the same place holds the marshal of an int, its length adjusted
        seven = marshal.dumps(7)
        blob[entry[6]:entry[6] + len(seven)] = seven
        head["index"]["probe_top"] = (*entry[:7], len(seven))
    new_head = marshal.dumps(head)
    stored.write_bytes(data[:8] + len(new_head).to_bytes(8, "little") + new_head + bytes(blob))
    out = _run(cache, [lib])
    assert [out[m]["value"] for m in ("probe_pkg", "probe_pkg.inner", "probe_top")] == ["pkg", "inner", "top"]
    # the run's save wrote the entry afresh: it reads as code again
    data = stored.read_bytes()
    head = marshal.loads(data[16:16 + int.from_bytes(data[8:16], "little")])
    entry = head["index"]["probe_top"]
    start = 16 + int.from_bytes(data[8:16], "little") + entry[6]
    assert len(entry) == 8 and type(marshal.loads(data[start:start + entry[7]])).__name__ == "code"
    assert _run(cache, [lib])["probe_top"]["value"] == "top"
