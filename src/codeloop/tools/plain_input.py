"""Tool input checked without pydantic, so a session's first tool call need not import it.

Importing pydantic and building a tool's input model costs more than the rest of a tool turn.
Most built-in input models are plain: str / int / bool / string-literal fields, optional ones
with a constant default, length and bound constraints, no validators. `spec_of(model)` records
such a model as a JSON-able spec (stored beside the tool's cached API schema, so it is derived
from the real model, keyed by the tool's source file); `check(spec, raw)` then returns a
`PlainInput` — attribute access and `model_dump`, like the model instance — but only when
pydantic would accept `raw` exactly as given. Anything else (a coercion, an unknown key, a
failing constraint) returns None and the caller validates with pydantic, so errors, coercions
and defaults stay pydantic's own.
"""

from __future__ import annotations

import types
import typing
from typing import Any

_KINDS = {str: "str", int: "int", bool: "bool"}
_BOUNDS = {"Gt": "gt", "Ge": "ge", "Lt": "lt", "Le": "le", "MinLen": "min_len", "MaxLen": "max_len"}


class PlainInput:
    """A validated tool input without its model class: the fields as attributes."""

    def __init__(self, values: dict[str, Any], aliases: dict[str, str]) -> None:
        self.__dict__.update(values)
        self._aliases = aliases

    def model_dump(self, *, by_alias: bool = False, exclude_none: bool = False, **_: Any) -> dict[str, Any]:
        out = {}
        for name, value in self.__dict__.items():
            if name == "_aliases" or exclude_none and value is None:
                continue
            out[self._aliases.get(name, name) if by_alias else name] = value
        return out

    def __repr__(self) -> str:
        return f"PlainInput({self.model_dump()!r})"


def _constraints(meta: list[Any], into: dict[str, Any]) -> bool:
    """Fold annotated_types bounds into `into`; False for any metadata not understood."""
    for m in meta:
        kind = type(m).__name__
        if kind == "SkipJsonSchema":
            continue
        key = _BOUNDS.get(kind)
        value = getattr(m, key if key in ("gt", "ge", "lt", "le") else "min_length" if key == "min_len"
                        else "max_length", None) if key else None
        if key is None or value is None or type(value) is not int:
            return False
        into[key] = value
    return True


def _field(annotation: Any, meta: list[Any]) -> dict[str, Any] | None:
    spec: dict[str, Any] = {"nullable": False}
    if not _constraints(meta, spec):
        return None
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = []
        for a in args:
            base = typing.get_args(a)[0] if typing.get_origin(a) is typing.Annotated else a
            if base is type(None):
                spec["nullable"] = True
            else:
                rest.append(a)
        if len(rest) != 1:
            return None
        annotation = rest[0]
        args, origin = typing.get_args(annotation), typing.get_origin(annotation)
    if origin is typing.Annotated:
        if not _constraints(list(annotation.__metadata__), spec):
            return None
        annotation = args[0]
        args, origin = typing.get_args(annotation), typing.get_origin(annotation)
    if origin is typing.Literal:
        if not args or not all(type(a) is str for a in args):
            return None
        spec.update(kind="str", enum=list(args))
        return spec
    kind = _KINDS.get(annotation) if origin is None else None
    if kind is None or kind == "bool" and len(spec) > 1:
        return None
    spec["kind"] = kind
    return spec


def spec_of(model: Any) -> dict[str, Any] | None:
    """`model`'s fields as a plain spec, or None when any part of it needs pydantic."""
    try:
        decorators = model.__pydantic_decorators__
        if any(getattr(decorators, k) for k in ("validators", "field_validators", "root_validators",
                                                  "field_serializers", "model_serializers", "model_validators",
                                                  "computed_fields")):
            return None
        if getattr(model, "__pydantic_post_init__", None) is not None:
            return None
        config = model.model_config
        if config.get("extra") not in ("forbid", "ignore", None) or config.get("strict") \
                or config.get("str_strip_whitespace") or config.get("str_to_lower") or config.get("str_to_upper"):
            return None
        fields = []
        for name, info in model.model_fields.items():
            f = _field(info.annotation, list(info.metadata))
            if f is None or info.default_factory is not None:
                return None
            required = info.is_required()
            if not required and info.default is not None and type(info.default) not in (str, int, bool):
                return None
            f.update(name=name, alias=info.alias, required=required, default=None if required else info.default)
            fields.append(f)
    except (AttributeError, TypeError):
        return None
    return {"fields": fields, "forbid": config.get("extra") == "forbid",
            "by_name": bool(config.get("populate_by_name") or config.get("validate_by_name"))}


def _valid(f: dict[str, Any], v: Any) -> bool:
    kind = f["kind"]
    if kind == "str":
        if type(v) is not str:
            return False
        if "enum" in f and v not in f["enum"]:
            return False
        n = len(v)
        return n >= f.get("min_len", 0) and ("max_len" not in f or n <= f["max_len"])
    if kind == "int":
        return type(v) is int and ("gt" not in f or v > f["gt"]) and ("ge" not in f or v >= f["ge"]) \
            and ("lt" not in f or v < f["lt"]) and ("le" not in f or v <= f["le"])
    return type(v) is bool


def check(spec: dict[str, Any], raw: Any) -> PlainInput | None:
    """`raw` as a PlainInput when pydantic would take it unchanged; None when in any doubt.

    `None` for an optional field counts as absent (as `registry.parse_tool_input` treats it)."""
    if not isinstance(raw, dict):
        return None
    values: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    used = 0
    try:
        for f in spec["fields"]:
            name, alias = f["name"], f["alias"]
            keys = [k for k in ((alias,) if alias else ()) + ((name,) if not alias or spec["by_name"] else ())
                    if k in raw]
            if alias:
                aliases[name] = alias
            if len(keys) > 1:
                return None
            if not keys:
                if f["required"]:
                    return None
                values[name] = f["default"]
                continue
            used += 1
            v = raw[keys[0]]
            if v is None and not f["required"]:
                values[name] = f["default"]
            elif _valid(f, v):
                values[name] = v
            else:
                return None
    except (KeyError, TypeError):
        return None   # a spec from some other version of this module
    if used != len(raw) and spec.get("forbid", True):
        return None
    return PlainInput(values, aliases)
