"""cli.startup.deferred: a deferred module runs its code at its first use, in the same object the
early importers hold, once even when threads race for it; a module whose code fails fails as an
import does; and a real `codeloop -p` reaches its first request without loading the deferred
modules (or what `inspect` would pull in) once its caches are warm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

PROBE_MODULE = textwrap.dedent("""
    import os
    with open(os.environ["RUNS_FILE"], "a") as f:
        f.write("ran\\n")
    VALUE = 42
    def double(x):
        return 2 * x
""")


def _run(tmp_path: Path, code: str, module_text: str = PROBE_MODULE) -> dict:
    (tmp_path / "probe_mod.py").write_text(module_text)
    runs = tmp_path / "runs.txt"
    env = {**os.environ, "RUNS_FILE": str(runs), "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(Path(__file__).resolve().parents[2] / "src")])}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["runs"] = runs.read_text().count("ran") if runs.exists() else 0
    return out


def test_a_deferred_module_runs_at_its_first_use_in_the_same_object(tmp_path):
    out = _run(tmp_path, """
        import json, sys, types
        from codeloop.cli.startup import deferred
        deferred.defer(("probe_mod", "inspect"))
        import probe_mod
        early = probe_mod
        before = [deferred.is_deferred(probe_mod), open(__import__("os").environ["RUNS_FILE"]).read()
                  if __import__("os").path.exists(__import__("os").environ["RUNS_FILE"]) else ""]
        value = probe_mod.VALUE
        from probe_mod import double
        import probe_mod as again
        import inspect
        sig = str(inspect.signature(double))
        print(json.dumps({"before": before, "value": value, "double": double(4), "same": again is early,
                          "plain": type(early) is types.ModuleType and not deferred.is_deferred(early),
                          "file": early.__file__.endswith("probe_mod.py"), "sig": sig,
                          "inspect_file": inspect.__file__.endswith("inspect.py"),
                          "names": "double" in dir(early)}))
    """)
    assert out == {"before": [True, ""], "value": 42, "double": 8, "same": True, "plain": True, "file": True,
                   "sig": "(x)", "inspect_file": True, "names": True, "runs": 1}


def test_threads_racing_for_a_deferred_module_run_its_code_once_and_see_all_of_it(tmp_path):
    slow = PROBE_MODULE + "\nimport time\nfor _ in range(200000):\n    pass\nLAST = 'last'\n"
    out = _run(tmp_path, """
        import json, threading
        from codeloop.cli.startup import deferred
        deferred.defer(("probe_mod",))
        import probe_mod
        start = threading.Barrier(8)
        seen = []
        def use():
            start.wait()
            seen.append(probe_mod.LAST)
        threads = [threading.Thread(target=use) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(json.dumps({"seen": seen}))
    """, slow)
    assert out == {"seen": ["last"] * 8, "runs": 1}


def test_a_module_whose_code_fails_fails_at_each_use_as_its_import_would(tmp_path):
    out = _run(tmp_path, """
        import json, sys, types
        from codeloop.cli.startup import deferred
        deferred.defer(("probe_mod",))
        import probe_mod
        errors = []
        try:
            probe_mod.VALUE
        except ZeroDivisionError:
            errors.append("first use")
        import probe_mod as again
        namespace = types.ModuleType.__getattribute__(again, "__dict__")   # read without a use
        errors.append([again is probe_mod, deferred.is_deferred(again), "double" in namespace])
        try:
            again.double
        except ZeroDivisionError:
            errors.append("second use")
        print(json.dumps({"errors": errors}))
    """, PROBE_MODULE + "\n1 / 0\n")
    # nothing the failed code defined stays behind (`double` would have): each use runs it again
    assert out == {"errors": ["first use", [True, True, False], "second use"], "runs": 2}


def test_codeloop_reaches_its_first_requests_without_the_deferred_modules(tmp_path):
    """A real `codeloop` ended as its first request leaves, and as the request after a Bash call
    leaves (the bench's launcher): the deferred modules are not loaded, nor what they would load
    (ast, dis, the _struct and binascii extensions): asyncio's signal handling no longer loads
    inspect (see cli.headless.loop_signals). Nothing has called `compile()`, whose first call
    builds Python's ~120 AST node types (a class-syntax NamedTuple under `from __future__ import
    annotations` did, on the first Bash call's way). Measured once the caches are warm, in print
    mode, stream-json output and stream-json input (the SDKs'). A module the interpreter loaded
    before codeloop ran (a `.pth` file in site-packages importing certifi, as CI's Python has,
    loads pathlib, struct and more) is not codeloop's to defer and is not counted."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fakeapi import ScriptedAPI, sse, text, tool_use
    from firstrequest import cli_env, launcher, report

    run = launcher("""
        import gc
        from codeloop.cli.startup.deferred import is_deferred
        names = ("inspect", "ast", "dis", "ipaddress", "ntpath", "base64", "copy", "fnmatch", "struct", "_struct",
                 "binascii")
        loaded = [n for n in names if n in sys.modules and n not in AT_START and not is_deferred(sys.modules[n])]
        if any(isinstance(o, type) and o.__module__ == "ast" and o.__name__ == "AST" for o in gc.get_objects()):
            loaded.append("AST node types")
        return loaded
    """)
    home = tmp_path / "home"
    home.mkdir()
    bash = sse(tool_use("Bash", {"command": "true"}))
    sdk_input = json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n"
    runs = [(["-p", "hi"], None), (["-p", "hi", "--output-format", "stream-json", "--verbose"], None),
            (["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"], sdk_input)]
    # a run stopped as its first request leaves takes no answer; one stopped at its second, the Bash call
    with ScriptedAPI(bash, sse(text("ok")), *[bash for _ in runs]).serve() as url:
        env = cli_env(home, url)
        # the first run in a config dir fills its caches (the tool schemas, importing the tools,
        # pydantic and so inspect; the compiled dataclass methods, with compile()): the runs after
        # it are the ones measured
        proc = subprocess.run([sys.executable, "-m", "codeloop", "-p", "hi", "--output-format", "json",
                               "--allowedTools", "Bash"], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0 and json.loads(proc.stdout)["result"] == "ok", proc.stderr
        for args, stdin in runs:
            for stop_at in ("1", "2"):   # the first request; the one after the Bash call
                proc = subprocess.run([sys.executable, "-c", run, *args, "--allowedTools", "Bash"],
                                      cwd=tmp_path, env={**env, "STOP_AT": stop_at}, input=stdin or "",
                                      capture_output=True, text=True, timeout=120)
                assert (args[-1], stop_at, report(proc.stderr)) == (args[-1], stop_at, []), proc.stderr


def test_only_source_and_frozen_modules_are_deferred(tmp_path):
    """An extension module's code runs as its module object is made: it is left to the usual
    import; a frozen module defers as a source one does; a loaded one is left alone. The extension
    and frozen modules are the first of a few not already loaded when the interpreter started (a
    `.pth` file may have loaded some: CI's loads `_bisect` and `ntpath`)."""
    out = _run(tmp_path, """
        import json, sys
        from importlib.machinery import ExtensionFileLoader, FrozenImporter, PathFinder
        from codeloop.cli.startup import deferred
        def first(names, loader):
            for n in names:
                spec = None if n in sys.modules else (FrozenImporter.find_spec(n) if loader is FrozenImporter
                                                       else PathFinder.find_spec(n))
                if spec is not None and (spec.loader is loader or isinstance(spec.loader, loader)):
                    return n
            raise SystemExit("no candidate module")
        ext = first(("_bisect", "_csv", "_lzma", "_statistics", "_zoneinfo"), ExtensionFileLoader)
        frozen, attr = {"ntpath": ("ntpath", "join"), "__hello__": ("__hello__", "main")}[
            first(("ntpath", "__hello__"), FrozenImporter)]
        deferred.defer((ext, frozen, "sys", "no_such_module_here"))
        kinds = {role: ("deferred" if deferred.is_deferred(sys.modules[n]) else "loaded") if n in sys.modules
                 else "absent" for role, n in (("extension", ext), ("frozen", frozen), ("sys", "sys"),
                                               ("missing", "no_such_module_here"))}
        mod = __import__(frozen)
        kinds["frozen works"] = callable(getattr(mod, attr)) and not deferred.is_deferred(mod)
        print(json.dumps(kinds))
    """)
    assert out == {"extension": "absent", "frozen": "deferred", "sys": "loaded", "missing": "absent",
                   "frozen works": True, "runs": 0}


def test_reading_a_deferred_modules_file_and_spec_runs_nothing(tmp_path):
    """What code walking sys.modules reads (`__file__`, `__spec__`, `__name__`...) is there before
    the code runs and the same after; `__doc__` is the code's, so it runs it."""
    out = _run(tmp_path, """
        import json, sys
        from codeloop.cli.startup import deferred
        deferred.defer(("probe_mod",))
        import probe_mod
        seen = {n: getattr(m, "__file__", None) for n, m in list(sys.modules.items())
                if n == "probe_mod"}
        before = [probe_mod.__name__, probe_mod.__spec__.name, probe_mod.__loader__ is probe_mod.__spec__.loader,
                  deferred.is_deferred(probe_mod)]
        probe_mod.__doc__
        after = [seen["probe_mod"] == probe_mod.__file__, deferred.is_deferred(probe_mod)]
        print(json.dumps({"before": before, "after": after}))
    """)
    assert out == {"before": ["probe_mod", "probe_mod", True, True], "after": [True, False], "runs": 1}
