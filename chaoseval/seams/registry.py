"""Registries with decorated factories, filled from code and from entry points.

A factory is registered under a name (``@perturbation("latency")``) and looked up by that
name, by an entry point of the registry's group, or by an import path ``pkg.module:attr``.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from chaoseval.errors import ConfigError

F = TypeVar("F", bound=Callable[..., object])


def import_object(path: str) -> object:
    """Import ``package.module:attribute``."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{path!r} is not an import path; write it as 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import module {module_name!r} (from {path!r}): {exc}") from exc
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


class Registry(Generic[F]):
    """Named factories of one kind, e.g. agents or perturbations."""

    def __init__(self, kind: str, group: str):
        self.kind = kind
        self.group = group
        self._items: dict[str, F] = {}
        self._loaded = False

    def register(self, name: str | None = None) -> Callable[[F], F]:
        def decorate(factory: F) -> F:
            key = name or factory.__name__
            self._items[key] = factory
            factory.__chaoseval_name__ = key  # type: ignore[attr-defined]
            return factory

        return decorate

    def _load_entry_points(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for ep in entry_points(group=self.group):
            if ep.name in self._items:
                continue
            try:
                obj = ep.load()
            except Exception as exc:  # a broken third-party plugin must not hide the others
                raise ConfigError(
                    f"{self.kind} plugin {ep.name!r} ({ep.value}, group {self.group}) failed to "
                    f"load: {type(exc).__name__}: {exc}. Fix or uninstall that package."
                ) from exc
            self._items.setdefault(ep.name, obj)

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._items)

    def items(self) -> Iterator[tuple[str, F]]:
        self._load_entry_points()
        yield from sorted(self._items.items())

    def get(self, name: str) -> F:
        if ":" in name:
            return import_object(name)  # type: ignore[return-value]
        self._load_entry_points()
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._items, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(sorted(self._items)) or "none"
            raise ConfigError(
                f"unknown {self.kind} {name!r}{hint} (known: {known}; or give 'module:factory')"
            ) from None
