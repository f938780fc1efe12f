"""cli.startup.dcreplay: a class built from a record is the class `dataclasses` builds — same
`__dict__` in the same order, same fields, same generated functions down to their code, defaults,
annotations and closure values (by identity: a default is the field's own object) — for every
dataclass in codeloop's modules and for hand-made cases of each feature; a class whose source
changed since the record is processed for real (errors included) and recorded again; a record
file another account could have written is not read; real `codeloop` runs fill and use it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from cachefiles import UNTRUSTED, untrust  # noqa: E402

pytestmark = pytest.mark.skipif(sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11),
                                reason="the replay mirrors CPython 3.11's dataclasses")

SRC = str(Path(__file__).resolve().parents[2] / "src")

# Describes every dataclass defined in the given modules as plain data, relations by identity.
DESCRIBE = textwrap.dedent('''
    import dataclasses, importlib, json, re, sys, types
    from codeloop.cli.startup import codecache, dcreplay
    mode, what = sys.argv[1], json.loads(sys.argv[2])
    if mode != "plain":
        codecache.install()
        dcreplay.install()

    def code(c):
        return [c.co_name, c.co_qualname, c.co_filename, c.co_code.hex(), c.co_names, c.co_varnames,
                c.co_freevars, c.co_cellvars, c.co_argcount, c.co_kwonlyargcount, c.co_flags,
                [code(k) if isinstance(k, types.CodeType) else repr(k) for k in c.co_consts]]

    def value(v, cls):
        fields = getattr(cls, "__dataclass_fields__", {})
        for tag, obj in (("cls", cls), ("MISSING", dataclasses.MISSING), ("object", object),
                         ("HAS_DEFAULT_FACTORY", dataclasses._HAS_DEFAULT_FACTORY),
                         ("FrozenInstanceError", dataclasses.FrozenInstanceError)):
            if v is obj:
                return "<" + tag + ">"
        for f in fields.values():
            for part in ("default", "default_factory"):
                if v is getattr(f, part) and v is not None and not isinstance(v, (bool, int, str)):
                    return "<" + part + " of " + f.name + ">"
        if isinstance(v, types.FunctionType):
            return function(v, cls)
        return type(v).__name__ + ":" + re.sub(" at 0x[0-9a-f]+", "", repr(v))   # (no addresses)

    def function(fn, cls):
        wrapped = getattr(fn, "__wrapped__", None)
        return ["fn", fn.__name__, fn.__qualname__, fn.__module__, code(fn.__code__),
                [value(v, cls) for v in fn.__defaults__ or ()],
                {k: value(v, cls) for k, v in (fn.__kwdefaults__ or {}).items()},
                [[k, value(v, cls)] for k, v in fn.__annotations__.items()],
                [value(c.cell_contents, cls) for c in fn.__closure__ or ()],
                function(wrapped, cls) if wrapped is not None else None, fn.__doc__]

    def field(f, cls):
        inherited = [b.__qualname__ for b in cls.__mro__[1:]
                     if f is getattr(b, "__dataclass_fields__", {}).get(f.name)]
        return [f.name, repr(f.type), f._field_type.name, f.init, f.repr, repr(f.hash), f.compare,
                value(f.kw_only, cls), dict(f.metadata), value(f.default, cls), value(f.default_factory, cls),
                inherited[:1]]

    def describe(cls):
        out = {"mro": [b.__qualname__ for b in cls.__mro__], "keys": list(cls.__dict__),
               "params": repr(cls.__dataclass_params__), "doc": cls.__doc__,
               "fields": [field(f, cls) for f in cls.__dataclass_fields__.values()], "attrs": {}}
        for k, v in cls.__dict__.items():
            if k not in ("__dataclass_fields__", "__dataclass_params__", "__doc__", "__dict__", "__weakref__",
                         "__annotations__", "__module__", "__qualname__"):
                out["attrs"][k] = value(v, cls) if not isinstance(v, (staticmethod, classmethod, property)) \\
                    else type(v).__name__
        return out

    modules, failed = [], []
    for name, source in what:
        try:
            if source is None:
                modules.append(importlib.import_module(name))
            else:
                mod = sys.modules[name] = types.ModuleType(name)
                exec(compile(source, name, "exec", dont_inherit=True), mod.__dict__)
                modules.append(mod)
        except Exception as exc:
            failed.append([name, type(exc).__name__, str(exc)])
    classes = {}
    for mod in modules:
        for obj in list(vars(mod).values()):
            if isinstance(obj, type) and "__dataclass_fields__" in obj.__dict__ and obj.__module__ == mod.__name__:
                classes[obj.__module__ + ":" + obj.__qualname__] = describe(obj)
    print(json.dumps({"classes": classes, "failed": failed, "replayed": dcreplay._state["replayed"],
                      "recorded": len(dcreplay._state["new"]), "inspect": "inspect" in sys.modules}))
    if mode != "plain":
        dcreplay.save()
        codecache.save()
''')

FEATURES = textwrap.dedent('''
    from __future__ import annotations
    import dataclasses, typing
    from dataclasses import dataclass, field, InitVar, KW_ONLY
    from typing import Any, ClassVar
    CV = ClassVar

    @dataclass
    class Plain:
        """Defaults of every kind."""
        a: int
        b: str = "x"
        c: list[str] = field(default_factory=list)
        d: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, metadata={"m": 1})
        e: int = field(default=3, init=False, hash=True)
        f: typing.ClassVar[int] = 5
        g: CV[str] = "class var"
        h: ClassVar = 1

    @dataclass(frozen=True, order=True)
    class Frozen:
        """Frozen and ordered."""
        a: str
        b: float = 1.5

    @dataclass(eq=False, repr=False, match_args=False)
    class Bare:
        """No eq, no repr, no match args."""
        a: int = 0

    @dataclass(unsafe_hash=True, kw_only=True)
    class Hashed:
        """A hash asked for; keyword-only fields."""
        a: int
        b: int = 2

    @dataclass
    class Marker:
        """The KW_ONLY marker and InitVar with __post_init__."""
        a: int
        _: KW_ONLY
        b: int = 1
        seed: InitVar[int] = 0
        c: dataclasses.InitVar[str] = "s"

        def __post_init__(self, seed, c):
            self.total = self.a + self.b + seed

    @dataclass
    class Child(Plain):
        """Inherits Plain's fields and overrides one."""
        b: str = "child"
        z: tuple = ()

    @dataclass
    class Selfish:
        """A field named self."""
        self: int
        other: int = 1

    @dataclass
    class Own:
        """Its own repr, eq and hash."""
        a: int

        def __repr__(self):
            return "own"

        def __eq__(self, other):
            return True

        def __hash__(self):
            return 1

    @dataclass(slots=True)
    class Slotted:
        """Slots."""
        a: int
        b: list = field(default_factory=list)

    @dataclass(slots=True, frozen=True)
    class FrozenSlotted:
        """Frozen with slots."""
        a: int = 1

    @dataclass(init=False)
    class NoInit:
        """No __init__."""
        a: int = 1

    @dataclass
    class NoDoc:
        a: int = 1
''')

REAL_ANNOTATIONS = textwrap.dedent('''
    import dataclasses
    from dataclasses import dataclass, field, InitVar, KW_ONLY
    from typing import ClassVar

    @dataclass
    class Typed:
        """Annotations as objects, not strings."""
        a: int
        _: KW_ONLY
        b: list[int] = field(default_factory=list)
        c: ClassVar[int] = 3
        d: InitVar[int] = 0

        def __post_init__(self, d):
            pass
''')


def _describe(tmp_path: Path, mode: str, what: list) -> dict:
    env = {"CODELOOP_CONFIG_DIR": str(tmp_path / "cfg"), "PATH": "/usr/bin:/bin", "PYTHONPATH": SRC,
           "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", DESCRIBE, mode, json.dumps(what)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _probe(source: str, name: str = "codeloop.replay_probe") -> list:
    return [[name, source]]


def test_every_feature_replays_as_dataclasses_builds_it(tmp_path):
    what = _probe(FEATURES) + _probe(REAL_ANNOTATIONS, "codeloop.replay_probe_typed")
    plain = _describe(tmp_path, "plain", what)
    first = _describe(tmp_path, "replay", what)
    second = _describe(tmp_path, "replay", what)
    assert plain["failed"] == first["failed"] == second["failed"] == []
    assert first["classes"] == plain["classes"]
    assert second["classes"] == plain["classes"]
    n = len(plain["classes"])
    # every class recorded, then replayed, but NoDoc: its docstring is made with inspect.signature
    assert (first["recorded"], first["replayed"]) == (n - 1, 0)
    assert (second["recorded"], second["replayed"]) == (0, n - 1)
    assert plain["classes"]["codeloop.replay_probe:NoDoc"]["doc"] == "NoDoc(a: 'int' = 1)"


def test_every_codeloop_dataclass_replays_as_dataclasses_builds_it(tmp_path):
    import codeloop

    root = Path(codeloop.__file__).parent
    names = sorted({".".join(("codeloop", *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
                    for p in root.rglob("*.py") if "__pycache__" not in p.parts and p.name != "__main__.py"})
    what = [[n, None] for n in names]
    plain = _describe(tmp_path, "plain", what)
    first = _describe(tmp_path, "replay", what)
    second = _describe(tmp_path, "replay", what)
    assert first["failed"] == plain["failed"] and second["failed"] == plain["failed"]
    assert len(plain["classes"]) > 150
    assert first["classes"] == plain["classes"]
    assert second["classes"] == plain["classes"]
    # codeloop's dataclasses all have docstrings: each one recorded once, then all replayed
    assert first["recorded"] >= len(plain["classes"]) and first["replayed"] == 0
    assert second["replayed"] >= len(plain["classes"]) and second["recorded"] == 0


@pytest.mark.parametrize("change, recorded", [
    (("    b: str = \"x\"\n", "    b: str = \"y\"\n    b2: int = 4\n"), True),    # a field added
    (("field(default_factory=list)", "field(default_factory=list, init=False)"), True),
    (("    h: ClassVar = 1\n", "    h: int = 1\n"), True),                        # a ClassVar becomes a field
    (("CV = ClassVar\n", "CV = int\n"), True),                                   # so does an alias's target
    (("@dataclass(frozen=True, order=True)", "@dataclass(order=True)"), True),
    (("    def __hash__(self):\n        return 1\n", ""), True),
    (("class Child(Plain):", "class Child(Marker):"), True),                       # another base
    # the same shape, other values: replayed, with this run's values
    (("field(default_factory=list)", "field(default_factory=tuple)"), False),
    (('    b: float = 1.5\n', '    b: float = 2.5\n'), False),
])
def test_a_changed_class_is_processed_again_and_recorded_again(tmp_path, change, recorded):
    old, new = change
    assert old in FEATURES
    changed = FEATURES.replace(old, new)
    _describe(tmp_path, "replay", _probe(FEATURES))
    plain = _describe(tmp_path, "plain", _probe(changed))
    again = _describe(tmp_path, "replay", _probe(changed))
    assert again["failed"] == plain["failed"] == []
    assert again["classes"] == plain["classes"]
    assert (again["recorded"] >= 1) is recorded
    after = _describe(tmp_path, "replay", _probe(changed))
    assert after["classes"] == plain["classes"] and after["recorded"] == 0


@pytest.mark.parametrize("broken, error", [
    ("    z: tuple = ()\n", "    z: list = []\n"),                             # a mutable default
    ("    other: int = 1\n", "    other: int = 1\n    more: int\n"),            # no default after one
    ("    b: float = 1.5\n", "    b: float = 1.5\n    extra = field(default=1)\n"),  # a Field, no annotation
    ("class Child(Plain):", "class Child(Frozen):"),     # a frozen base under a class that is not
])
def test_a_class_that_now_fails_fails_as_dataclasses_fails(tmp_path, broken, error):
    _describe(tmp_path, "replay", _probe(FEATURES))
    changed = FEATURES.replace(broken, error)
    plain = _describe(tmp_path, "plain", _probe(changed))
    again = _describe(tmp_path, "replay", _probe(changed))
    assert plain["failed"] and again["failed"] == plain["failed"]


@pytest.mark.parametrize("how", [*UNTRUSTED, "garbage"])
def test_a_record_file_not_this_users_alone_is_not_read(tmp_path, how):
    what = _probe(FEATURES)
    _describe(tmp_path, "replay", what)
    stored = tmp_path / "cfg" / "cache" / f"dataclass-replay.{sys.implementation.cache_tag}.marshal"
    assert stored.is_file()
    if how == "garbage":
        stored.write_bytes(b"\x00not marshal")
    else:
        untrust(stored, how, tmp_path / "elsewhere.marshal")
    again = _describe(tmp_path, "replay", what)
    assert again["replayed"] == 0 and again["classes"] == _describe(tmp_path, "plain", what)["classes"]


def test_real_runs_record_then_replay_and_need_no_inspect(tmp_path):
    """A first `codeloop -p` run records its classes; the next reaches its first request with
    every dataclass on the way replayed, none processed for real, and `inspect` not loaded."""
    from fakeapi import ScriptedAPI, sse, text
    from firstrequest import cli_env, launcher, report

    run = launcher("""
        r = sys.modules["codeloop.cli.startup.dcreplay"]._state
        inspect = sys.modules.get("inspect")
        return [r["replayed"], len(r["new"]), inspect is not None and type(inspect).__name__ != "DeferredModule"]
    """)
    home = tmp_path / "home"
    home.mkdir()
    with ScriptedAPI(sse(text("ok")), sse(text("ok"))).serve() as url:
        env = cli_env(home, url)
        proc = subprocess.run([sys.executable, "-m", "codeloop", "-p", "hi", "--output-format", "json"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and json.loads(proc.stdout)["result"] == "ok", proc.stderr
        assert (home / "cache" / f"dataclass-replay.{sys.implementation.cache_tag}.marshal").is_file()
        proc = subprocess.run([sys.executable, "-c", run, "-p", "hi"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
    replayed, recorded, inspect_loaded = report(proc.stderr)
    assert replayed > 50 and recorded == 0 and not inspect_loaded, proc.stderr


def test_a_record_that_cannot_be_applied_leaves_the_class_to_dataclasses(tmp_path):
    """A record whose inputs match but whose effects name a field the class lacks (a damaged or
    stale file), or an entry that is no record at all: nothing of it reaches the class, the real
    processing builds it and records it again."""
    import marshal

    what = _probe(FEATURES)
    plain = _describe(tmp_path, "plain", what)
    _describe(tmp_path, "replay", what)
    stored = tmp_path / "cfg" / "cache" / f"dataclass-replay.{sys.implementation.cache_tag}.marshal"
    table = marshal.loads(stored.read_bytes())
    inputs, effects = table["code"]["codeloop.replay_probe:Plain"]
    damaged = []
    for effect in effects:
        if effect[0] == "fn" and effect[1] == "__init__":
            code, sources, *rest = effect[3]
            sources = tuple((n, ("type", "no_such_field") if src[0] == "type" else src) for n, src in sources)
            effect = (*effect[:3], (code, sources, *rest))
        damaged.append(effect)
    table["code"]["codeloop.replay_probe:Plain"] = (inputs, tuple(damaged))
    table["code"]["codeloop.replay_probe:Frozen"] = 7   # not even a record: ignored, recorded again
    stored.write_bytes(marshal.dumps(table))
    again = _describe(tmp_path, "replay", what)
    assert again["classes"] == plain["classes"]
    assert again["replayed"] == len(plain["classes"]) - 3   # all but NoDoc, the damaged Plain and Frozen
    assert again["recorded"] == 2
    after = _describe(tmp_path, "replay", what)
    assert after["classes"] == plain["classes"] and after["replayed"] == len(plain["classes"]) - 1
