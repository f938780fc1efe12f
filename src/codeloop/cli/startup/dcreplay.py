"""Dataclass processing replayed for codeloop's own classes: what `dataclasses` did to a class at
an earlier start, done again from a record when everything it reads is the same.

After the compiled methods came from a cache (codecache), `dataclasses` still spent some 6 ms of
each start-up working out, for codeloop's ~80 classes and ~520 fields, what it had worked out the
time before: each field's kind (three regular-expression tests of each string annotation), the
text of each generated method, the checks. `install` puts a `_process_class` in front of the
module's own, for classes of codeloop's modules only, on the CPython minor version this mirrors
(3.11; elsewhere nothing is installed). The first time a class is seen (or whenever anything it
is built from differs), the real `_process_class` runs and the replay records:

- the inputs, everything the processing reads: the decorator's arguments; each annotation with
  its kind (KW_ONLY marker, ClassVar, InitVar or field, found as `dataclasses` finds it, through
  the class's module); the class attribute of each (absent, a `Field` and its settings, or a plain
  value, and whether that value is unhashable); the fields of the dataclass bases and whether
  they are frozen; which generated names the class defines itself, its `__hash__`, a
  `__post_init__`, a docstring;
- the effects, in the order they reached the class's `__dict__`: the parameters and fields
  objects, each default set or deleted, `__match_args__`, a `__hash__` of None, and each
  generated function as its code object plus, for its defaults, keyword defaults, annotations and
  closure cells, which of the values `dataclasses` passed it they are (a field's type, default or
  factory, `MISSING`, the class…). Anything else, or a value of unknown origin: not recorded.

A replay builds the `Field` objects as `_get_field` does (the real `field()` for plain defaults,
the class's own `Field` objects otherwise), then applies the effects, making each function from
its code with the values of this run's fields, and calls `abc.update_abstractmethods` as the
real one does. Every check `dataclasses` makes is a function of the inputs, so a class whose
inputs equal a recorded set raised nothing when recorded and raises nothing now; one that would
raise, or that has no record, goes through the real processing (which raises as usual). Classes
with `slots` are replayed too, then made again by `dataclasses`' own `_add_slots`, as the real
processing ends.
Classes without a docstring (its text comes from `inspect.signature`) or with a `Field` that has
no annotation are never recorded. The records live in a marshal file beside the
dataclass code cache, read only if it is this user's alone (importcache's rule), written when the
run ends if something was recorded.
"""

from __future__ import annotations

import sys
from _thread import get_ident
from types import CellType, FunctionType, MemberDescriptorType
from typing import Any

from codeloop.cli.startup.importcache import read_table, save_new

MAX_ENTRIES = 2000   # a bound on the file, whatever codeloop's modules define
_FORMAT = 1          # bumped whenever what is recorded changes meaning
_NOT_SET = "<MISSING>"   # how `dataclasses.MISSING` appears among the recorded inputs
# the names `dataclasses` may add to a class itself (a class defining one keeps its own)
_GENERATED = ("__init__", "__repr__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__", "__setattr__",
              "__delattr__", "__match_args__")
_state: dict[str, Any] = {"path": None, "known": {}, "new": {}, "real": None, "create": None,
                          "replayed": 0}
_recording: dict[int, list[tuple[Any, dict[str, Any]]]] = {}   # thread → the functions made so far
_dc: Any = None   # the dataclasses module, once installed
_FIELD_TYPES: dict[str, Any] = {}   # a recorded kind ("f", "c", "i") → dataclasses' field-type marker


def supported() -> bool:
    """Whether this interpreter's `dataclasses` is the one the replay mirrors."""
    return sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)


def _cache_path() -> Any:
    from codeloop.config.paths import config_dir

    return config_dir() / "cache" / f"dataclass-replay.{sys.implementation.cache_tag}.marshal"


def install() -> None:
    """Replay recorded dataclass processing from now on in this process (once; never fails the run)."""
    global _dc
    import dataclasses

    if not supported() or _state["real"] is not None:
        return
    try:
        path = _cache_path()
        known = read_table(str(path), (_FORMAT, sys.version))
    except Exception:  # noqa: BLE001 — no records: dataclasses work as usual
        return
    _dc = dataclasses
    _FIELD_TYPES.update(f=dataclasses._FIELD, c=dataclasses._FIELD_CLASSVAR,  # type: ignore[attr-defined]
                        i=dataclasses._FIELD_INITVAR)  # type: ignore[attr-defined]
    _state.update(path=path, known=known, new={}, real=dataclasses._process_class,  # type: ignore[attr-defined]
                  create=dataclasses._create_fn)  # type: ignore[attr-defined]
    dataclasses._process_class = _process_class   # type: ignore[attr-defined]
    dataclasses._create_fn = _create_fn           # type: ignore[attr-defined]


def save() -> None:
    """Write the records made in this process (if any) for the next run."""
    save_new(_state, (_FORMAT, sys.version))


def _process_class(cls: Any, *args: Any) -> Any:
    """`dataclasses._process_class` for codeloop's classes: replayed from a record whose inputs are
    this class's, else processed for real and recorded."""
    real = _state["real"]
    module = cls.__module__
    # args: init, repr, eq, order, unsafe_hash, frozen, match_args, kw_only, slots, weakref_slot
    if not (module == "codeloop" or module.startswith("codeloop.")):
        return real(cls, *args)
    try:
        inputs = _inputs(cls, args)
    except Exception:  # noqa: BLE001 — an attribute that cannot be read: the real processing decides
        inputs = None
    if inputs is None:
        return real(cls, *args)
    key = f"{module}:{cls.__qualname__}"
    entry = _state["known"].get(key)
    if type(entry) is tuple and len(entry) == 2 and entry[0] == inputs:   # (a file's entry may be anything)
        replayed = _replay(cls, args, inputs, entry[1])
        if replayed is not None:
            _state["replayed"] += 1
            return replayed
    before = dict(cls.__dict__)
    made: list[tuple[Any, dict[str, Any]]] = []
    _recording[get_ident()] = made
    try:
        result = real(cls, *args)
    finally:
        del _recording[get_ident()]
    try:
        effects = _effects(cls, before, made, inputs)
    except Exception:  # noqa: BLE001 — something the record cannot describe: not recorded
        effects = None
    # (with slots, the result is a new class made from this one's finished __dict__: _add_slots)
    if effects is not None and (result is cls or args[8]) and len(_state["known"]) < MAX_ENTRIES:
        _state["known"][key] = _state["new"][key] = (inputs, effects)
    return result


def _create_fn(name: str, args: Any, body: Any, **kwargs: Any) -> Any:
    """`dataclasses._create_fn`, noting on a recording thread each function made and the values it
    was made from (the real one fills `locals`, making an empty one when given none, as here)."""
    made = _recording.get(get_ident())
    if made is None:
        return _state["create"](name, args, body, **kwargs)
    if kwargs.get("locals") is None:
        kwargs["locals"] = {}
    fn = _state["create"](name, args, body, **kwargs)
    made.append((fn, kwargs["locals"]))
    return fn


# -- what the processing reads -----------------------------------------------------------------------

def _enc(value: Any) -> Any:
    return _NOT_SET if value is _dc.MISSING else value


def _field_shape(f: Any) -> tuple[Any, ...]:
    """What the generated code and the checks read of a (processed) field."""
    return (f.name, f._field_type.name, f.init, f.repr, _enc(f.hash), f.compare, _enc(f.kw_only),
            f.default is _dc.MISSING, f.default_factory is _dc.MISSING)


def _kind(annotation: Any, cls: Any, ns: dict[str, Any], typing: Any) -> str:
    """The annotation's kind as `dataclasses` decides it: "k" (the KW_ONLY marker), "c" (ClassVar),
    "i" (InitVar) or "f" (a field), tested in its order, a string through the class's module."""
    dc = _dc
    if type(annotation) is str:
        match = dc._MODULE_IDENTIFIER_RE.match(annotation)
        if match is None:
            return "f"
        if match.group(1):   # `module.Name`: as dataclasses does it
            if dc._is_type(annotation, cls, dc, dc.KW_ONLY, dc._is_kw_only):
                return "k"
            if typing and dc._is_type(annotation, cls, typing, typing.ClassVar, dc._is_classvar):
                return "c"
            return "i" if dc._is_type(annotation, cls, dc, dc.InitVar, dc._is_initvar) else "f"
        value = ns.get(match.group(2))
        # nothing, or a class other than InitVar: none of the three tests can hold (they look for
        # the KW_ONLY instance, ClassVar or an alias of it, InitVar or an instance of it)
        if value is None or (isinstance(value, type) and value is not dc.InitVar):
            return "f"
    else:
        value = annotation
    if dc._is_kw_only(value, dc):
        return "k"
    if typing and dc._is_classvar(value, typing):
        return "c"
    return "i" if dc._is_initvar(value, dc) else "f"


def _inputs(cls: Any, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Everything the processing of `cls` reads, as a marshal-able tuple; None: never recorded."""
    dc = _dc
    module = sys.modules.get(cls.__module__)
    if module is None or not cls.__doc__:
        return None
    ns, own_dict, typing = module.__dict__, cls.__dict__, sys.modules.get("typing")
    annotations = own_dict.get("__annotations__", {})
    missing, field_class = dc.MISSING, dc.Field
    own = []
    for name, annotation in annotations.items():
        kind = _kind(annotation, cls, ns, typing)
        attr = getattr(cls, name, missing)
        if attr is missing:
            seen: tuple[Any, ...] = ("m",)
        elif isinstance(attr, field_class):
            seen = ("F", attr.init, attr.repr, _NOT_SET if attr.hash is missing else attr.hash, attr.compare,
                    _NOT_SET if attr.kw_only is missing else attr.kw_only, attr.default is missing,
                    attr.default_factory is missing, attr.default.__class__.__hash__ is None)
        elif isinstance(attr, MemberDescriptorType):
            return None
        else:
            seen = ("v", attr.__class__.__hash__ is None)
        own.append((name, kind, seen))
    if any(isinstance(v, field_class) and k not in annotations for k, v in own_dict.items()):
        return None
    bases = []
    for base in cls.__mro__[-1:0:-1]:
        fields = getattr(base, "__dataclass_fields__", None)
        if fields is not None:
            bases.append((bool(base.__dataclass_params__.frozen), tuple(_field_shape(f) for f in fields.values())))
    own_hash = own_dict.get("__hash__", dc.MISSING)
    return (args, tuple(own), tuple(bases), tuple(n for n in _GENERATED if n in own_dict),
            "absent" if own_hash is dc.MISSING else "none" if own_hash is None else "set",
            hasattr(cls, "__post_init__"))


# -- what it did -------------------------------------------------------------------------------------

def _source(name: str, value: Any, fields: dict[str, Any], cls: Any) -> tuple[str, ...] | None:
    """Where a value `dataclasses` handed a generated function came from, or None."""
    if name.startswith("_type_") and (f := fields.get(name[6:])) is not None and value is f.type:
        return ("type", f.name)
    if name.startswith("_dflt_") and (f := fields.get(name[6:])) is not None:
        if value is f.default:
            return ("default", f.name)
        if value is f.default_factory:
            return ("factory", f.name)
    for tag, obj in _consts(cls).items():
        if value is obj:
            return (tag,)
    return None


def _consts(cls: Any) -> dict[str, Any]:
    """The values other than a field's that `dataclasses` hands generated functions, by the tag a
    recipe names them with (the same table records and replays)."""
    dc = _dc
    return {"MISSING": dc.MISSING, "HAS_DEFAULT_FACTORY": dc._HAS_DEFAULT_FACTORY, "object": object,
            "cls": cls, "FrozenInstanceError": dc.FrozenInstanceError, "None": None}


def _recipe(fn: Any, values: dict[str, Any], fields: dict[str, Any], cls: Any) -> tuple[Any, ...] | None:
    """A generated function as its code and, for each part made of the values it was given, the
    name of that value."""
    sources = {}
    for name, value in values.items():
        if (src := _source(name, value, fields, cls)) is None:
            return None
        sources[name] = src

    def named(value: Any, *candidates: str) -> str | None:
        return next((n for n in candidates if n in values and values[n] is value), None)

    code = fn.__code__
    closure = tuple(name if cell.cell_contents is values.get(name, cell) else None
                    for name, cell in zip(code.co_freevars, fn.__closure__ or ()))
    positional = code.co_varnames[:code.co_argcount]
    defaults = fn.__defaults__ or ()
    default_names = tuple(named(v, f"_dflt_{p}", "_HAS_DEFAULT_FACTORY")
                          for p, v in zip(positional[len(positional) - len(defaults):], defaults))
    kwdefaults = tuple((p, named(v, f"_dflt_{p}", "_HAS_DEFAULT_FACTORY"))
                       for p, v in (fn.__kwdefaults__ or {}).items())
    annotations = tuple((p, named(v, "_return_type" if p == "return" else f"_type_{p}"))
                        for p, v in fn.__annotations__.items())
    parts = (*closure, *default_names, *(n for _, n in kwdefaults), *(n for _, n in annotations))
    if None in parts or len(closure) != len(code.co_freevars):
        return None
    return (code, tuple(sources.items()), closure, default_names, kwdefaults, annotations)


def _effects(cls: Any, before: dict[str, Any], made: list[tuple[Any, dict[str, Any]]],
             inputs: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The changes the real processing made to `cls.__dict__`, in order, or None (not describable)."""
    after = cls.__dict__
    fields = after["__dataclass_fields__"]
    own = {name: kind for name, kind, _ in inputs[1] if kind != "k"}
    if any(fields[name]._field_type is not _FIELD_TYPES[kind] for name, kind in own.items()):
        return None   # the kinds the replay would give are not the ones dataclasses gave
    by_id = {id(fn): (fn, values) for fn, values in made}
    effects: list[tuple[Any, ...]] = [("del", name) for name in before if name not in after]
    if any(name not in own for _, name in effects):
        return None
    for name, value in after.items():
        if name in before and before[name] is value:
            continue
        if name in ("__dataclass_params__", "__dataclass_fields__"):
            effects.append((name,))
        elif name in own and value is fields[name].default:
            effects.append(("default", name))
        elif name == "__match_args__" and type(value) is tuple and all(type(n) is str for n in value):
            effects.append(("value", name, value))
        elif name == "__hash__" and value is None:
            effects.append(("value", name, None))
        elif type(value) is FunctionType and value.__qualname__ == f"{cls.__qualname__}.{value.__name__}":
            inner, wrapped = value, False
            if id(value) not in by_id and id(getattr(value, "__wrapped__", None)) in by_id:
                inner, wrapped = value.__wrapped__, True  # type: ignore[attr-defined]  # __repr__, via _recursive_repr
            if id(inner) not in by_id or (recipe := _recipe(inner, by_id[id(inner)][1], fields, cls)) is None:
                return None
            effects.append(("fn", name, wrapped, recipe))
        else:
            return None
    return tuple(effects)


# -- the replay ---------------------------------------------------------------------------------------

def _function(recipe: tuple[Any, ...], fields: dict[str, Any], consts: dict[str, Any], globals: dict[str, Any]) -> Any:
    code, sources, closure, default_names, kwdefaults, annotations = recipe
    values = {}
    for name, (tag, *of) in sources:
        if tag == "type":
            values[name] = fields[of[0]].type
        elif tag == "default":
            values[name] = fields[of[0]].default
        elif tag == "factory":
            values[name] = fields[of[0]].default_factory
        else:
            values[name] = consts[tag]
    fn = FunctionType(code, globals, code.co_name, tuple([values[n] for n in default_names]) or None,
                      tuple([CellType(values[n]) for n in closure]) or None)
    if kwdefaults:
        fn.__kwdefaults__ = {p: values[n] for p, n in kwdefaults}
    fn.__annotations__ = {p: values[n] for p, n in annotations}
    return fn


def _replay(cls: Any, args: tuple[Any, ...], inputs: tuple[Any, ...], effects: tuple[Any, ...]) -> Any | None:
    """Apply a record to `cls`; None (and `cls` untouched) when it cannot be: the real processing
    then runs. Everything that could fail (the fields, the functions) is made before the class is
    changed; the fields' own `Field` objects get what `_get_field` gives them either way."""
    dc = _dc
    init, repr_, eq, order, unsafe_hash, frozen, _, kw_only = args[:8]
    try:
        globals = sys.modules[cls.__module__].__dict__
        fields: dict[str, Any] = {}
        for base in cls.__mro__[-1:0:-1]:
            base_fields = getattr(base, "__dataclass_fields__", None)
            if base_fields is not None:
                for f in base_fields.values():
                    fields[f.name] = f
        annotations = cls.__dict__.get("__annotations__", {})
        missing, field_class, field_type = dc.MISSING, dc.Field, _FIELD_TYPES
        own = []
        for name, kind, _ in inputs[1]:   # as _get_field makes them
            if kind == "k":
                kw_only = True
                continue
            attr = getattr(cls, name, missing)
            f = attr if isinstance(attr, field_class) else dc.field(default=attr)
            f.name, f.type, f._field_type = name, annotations[name], field_type[kind]
            if kind != "c" and f.kw_only is missing:
                f.kw_only = kw_only
            own.append(f)
        for f in own:
            fields[f.name] = f
        consts = _consts(cls)
        changes: list[tuple[str, Any]] = []   # (name, value); value `missing`: delete it
        for effect in effects:
            what = effect[0]
            if what == "__dataclass_params__":
                changes.append((what, dc._DataclassParams(init, repr_, eq, order, unsafe_hash, frozen)))
            elif what == "__dataclass_fields__":
                changes.append((what, fields))
            elif what == "default":
                changes.append((effect[1], fields[effect[1]].default))
            elif what == "del":
                changes.append((effect[1], missing))
            elif what == "value":
                changes.append((effect[1], effect[2]))
            else:   # "fn"
                fn = _function(effect[3], fields, consts, globals)
                if effect[2]:
                    fn = dc._recursive_repr(fn)
                fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
                changes.append((effect[1], fn))
    except Exception:  # noqa: BLE001 — a record this run cannot apply: processed for real
        return None
    for name, value in changes:
        if value is missing:
            delattr(cls, name)
        else:
            setattr(cls, name, value)
    if args[8]:   # slots: the class made again with __slots__, as the real processing ends
        cls = dc._add_slots(cls, frozen, args[9])
    dc.abc.update_abstractmethods(cls)
    return cls
