"""Attributes of a `ToolContext` that are made the first time they are read.

The session gives its tool context a background-task registry, a task board and a prompt
scheduler, yet most runs never touch them: building them (and importing their modules) before
the first request is start-up time spent for nothing. A `MadeOnUse` attribute holds either a
value or a pending factory (`make_on_use`); the first read runs the factory and keeps its result,
and an assignment replaces both. `made` and `available` look without making anything, for the
code that only asks whether there is something to stop, or whether a tool could use it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")
_PENDING = "_made_on_use"   # the instance's {attribute: factory} not run yet


class MadeOnUse(Generic[T]):
    """A data descriptor (a dataclass field whose default is None) with an optional factory."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: Any = None) -> None: ...
    @overload
    def __get__(self, obj: object, owner: Any = None) -> T | None: ...

    def __get__(self, obj: object | None, owner: Any = None) -> T | None:
        if obj is None:
            return None   # the dataclass default
        values = obj.__dict__
        if self.name in values:
            return values[self.name]
        make = values.get(_PENDING, {}).pop(self.name, None)
        if make is None:
            return None
        value = values[self.name] = make()
        return value

    def __set__(self, obj: object, value: T | None) -> None:
        obj.__dict__.get(_PENDING, {}).pop(self.name, None)   # a value given outright wins
        obj.__dict__[self.name] = value


def make_on_use(obj: object, name: str, factory: Callable[[], Any]) -> None:
    """Let the first read of `obj.name` (a MadeOnUse attribute) return `factory()`."""
    obj.__dict__.pop(name, None)
    obj.__dict__.setdefault(_PENDING, {})[name] = factory


def made(obj: object, name: str) -> Any:
    """`obj.name` if it has a value already, else None; never runs the factory."""
    return obj.__dict__.get(name)


def available(obj: object, name: str) -> bool:
    """Whether reading `obj.name` would give something (a value, or a factory waiting to make one)."""
    return obj.__dict__.get(name) is not None or name in obj.__dict__.get(_PENDING, {})
