"""cli.codecache: dataclasses built with cached compiled methods behave exactly as without, and
a second process compiles nothing the first one already did."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
import textwrap

PROBE = textwrap.dedent("""
    import dataclasses, json, os, sys, types
    from codeloop.cli.startup import codecache
    if sys.argv[1] == "cache":
        codecache.install()

    @dataclasses.dataclass
    class Other:   # not codeloop's: compiled as usual, never stored
        a: int

    # the classes below live in a codeloop module, as codeloop's own do
    mod = sys.modules["codeloop.probe"] = types.ModuleType("codeloop.probe")
    exec(compile(sys.argv[2], "probe", "exec", dont_inherit=True), mod.__dict__)
    Point, Frozen = mod.Point, mod.Frozen
    p = Point(1)
    p.tags.append("t")
    f = Frozen("z")
    try:
        f.a = "no"
        frozen = "mutable"
    except dataclasses.FrozenInstanceError:
        frozen = "frozen"
    print(json.dumps([repr(p), p == Point(1, 2, ["t"]), repr(f), hash(f) == hash(Frozen("z")),
                      Frozen("a") < Frozen("b"), frozen, Point.__init__.__qualname__, Point.__doc__,
                      Other.__doc__, len(codecache._state["new"])]))
    codecache.save()
""")
CLASSES = textwrap.dedent("""
    import dataclasses

    @dataclasses.dataclass
    class Point:
        x: int
        y: int = 2
        tags: list = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, order=True)
    class Frozen:
        a: str
        b: float = 1.5
""")


def _run(tmp_path, mode: str) -> list:
    env = {"CODELOOP_CONFIG_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", PROBE, mode, CLASSES], capture_output=True, text=True, env=env,
                         check=True).stdout
    return json.loads(out)


def test_cached_dataclasses_behave_as_plain_ones_and_the_second_run_compiles_nothing(tmp_path):
    plain = _run(tmp_path, "plain")
    first = _run(tmp_path, "cache")
    second = _run(tmp_path, "cache")
    assert first[:-1] == plain[:-1] == second[:-1]
    assert plain[-1] == 0 and first[-1] > 0 and second[-1] == 0
    assert first[:3] == ["Point(x=1, y=2, tags=['t'])", True, "Frozen(a='z', b=1.5)"]
    assert first[7:9] == ["Point(x: int, y: int = 2, tags: list = <factory>)", "Other(a: int)"]


def test_a_corrupt_or_foreign_cache_is_ignored(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    plain = _run(tmp_path, "plain")
    path = cache / f"dataclass-code.{sys.implementation.cache_tag}.marshal"
    path.write_bytes(b"\x00garbage")
    assert _run(tmp_path, "cache")[:-1] == plain[:-1]
    path.write_bytes(marshal.dumps({"version": "another python", "code": {"x": compile("1", "<s>", "exec")}}))
    again = _run(tmp_path, "cache")
    assert again[:-1] == plain[:-1] and again[-1] > 0   # nothing taken from another version's file


def test_a_cache_file_others_can_write_is_not_read(tmp_path):
    _run(tmp_path, "cache")
    path = tmp_path / "cache" / f"dataclass-code.{sys.implementation.cache_tag}.marshal"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert _run(tmp_path, "cache")[-1] == 0
    path.chmod(0o666)   # another account could have put code in it: compiled afresh instead
    assert _run(tmp_path, "cache")[-1] > 0


def test_entries_that_are_not_code_are_compiled_afresh(tmp_path):
    """A table of the right version whose entries are no code objects (a damaged file): each class
    is compiled as without the cache and still behaves the same."""
    plain = _run(tmp_path, "plain")
    _run(tmp_path, "cache")
    path = tmp_path / "cache" / f"dataclass-code.{sys.implementation.cache_tag}.marshal"
    table = marshal.loads(path.read_bytes())
    table["code"] = dict.fromkeys(table["code"], 7)
    path.write_bytes(marshal.dumps(table))
    again = _run(tmp_path, "cache")
    assert again[:-1] == plain[:-1] and again[-1] > 0
