"""Registries with decorated factories, filled from code and from entry points.

A factory is registered under a name (``@perturbation("latency")``) and looked up by that
name, by an entry point of the registry's group, or by an import path ``pkg.module:attr``.

As pluggy does it: a factory is validated when it registers (a registry's ``validate`` checks
its type; a name is taken once), and entry points that fail to load or to validate are kept
aside as :class:`BrokenEntryPoint` beside the working ones, so one broken package neither
hides the others nor stops a run that does not use it. Using a broken one by name says which
entry point broke, why, and how to fix it.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar, cast

from chaoseval.errors import ChaosevalError, ConfigError

F = TypeVar("F")
T = TypeVar("T")


def import_object(path: str) -> object:
    """Import ``package.module:attribute``."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{path!r} is not an import path; write it as 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import module {module_name!r} (from {path!r}): {exc}") from exc
    except SyntaxError as exc:  # the user's file: where, and what, in one line
        where = f"{exc.filename}:{exc.lineno}" + (f":{exc.offset}" if exc.offset else "")
        text = f" ({exc.text.strip()[:120]})" if exc.text and exc.text.strip() else ""
        raise ConfigError(
            f"cannot import module {module_name!r} (from {path!r}): {where}: "
            f"{type(exc).__name__}: {exc.msg}{text}"
        ) from None
    except Exception as exc:  # raised by the module's own top-level code
        raise ConfigError(
            f"cannot import module {module_name!r} (from {path!r}): {_raised_at(exc)}"
            f"{type(exc).__name__}: {exc}"
        ) from exc
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1)
            hint = f"; did you mean {module_name}:{close[0]}?" if close else ""
            raise ConfigError(f"module {module_name!r} has no attribute {attr!r}{hint}") from None
    return obj


def _raised_at(exc: BaseException) -> str:
    """``file:line: `` of the innermost frame ``exc`` passed through ("" when it has none)."""
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}: "


@dataclass(frozen=True)
class BrokenEntryPoint:
    """An installed entry point that failed to load or to validate, and why."""

    group: str
    name: str
    value: str
    distribution: str | None
    error: str
    # What was raised, for callers that report it in their own terms (lint: per file).
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, ep: EntryPoint, exc: BaseException) -> BrokenEntryPoint:
        dist = _distribution(ep)
        # chaoseval's own errors already say what broke; anything else gets its type named.
        error = str(exc) if isinstance(exc, ChaosevalError) else f"{type(exc).__name__}: {exc}"
        return cls(ep.group, ep.name, ep.value, dist, error, exc)

    def where(self) -> str:
        source = f", package {self.distribution}" if self.distribution else ""
        return f"entry point {self.name} = {self.value} (group {self.group}{source})"

    def fix(self) -> str:
        if self.distribution:
            return (
                f"fix or upgrade the package {self.distribution}, or uninstall it "
                f"(pip uninstall {self.distribution})"
            )
        return "fix or uninstall the package that declares it"

    def describe(self) -> str:
        return f"{self.where()} is broken: {self.error}. To fix: {self.fix()}"


def _distribution(ep: EntryPoint) -> str | None:
    return ep.dist.name if ep.dist is not None else None


def collect_entry_points(
    group: str, load: Callable[[EntryPoint], T]
) -> tuple[list[tuple[EntryPoint, T]], list[BrokenEntryPoint]]:
    """Load every entry point of ``group`` with ``load``; the ones that raise are returned
    apart, with their error, instead of stopping at the first."""
    loaded: list[tuple[EntryPoint, T]] = []
    broken: list[BrokenEntryPoint] = []
    for ep in _entry_points(group):
        try:
            loaded.append((ep, load(ep)))
        except Exception as exc:  # a third-party package's bug of any kind: keep it apart
            broken.append(BrokenEntryPoint.of(ep, exc))
    return loaded, broken


def _entry_points(group: str) -> list[EntryPoint]:
    """The group's entry points, chaoseval's own first: another package cannot take a bundled
    name."""
    return sorted(entry_points(group=group), key=_not_chaosevals)


def _not_chaosevals(ep: EntryPoint) -> bool:
    return _distribution(ep) != "chaoseval"


def _callable(kind: str, name: str, obj: object) -> object:
    if not callable(obj):
        raise ConfigError(f"{kind} {name!r}: {obj!r} is not callable")
    return obj


def qualified_name(obj: object) -> str:
    module = getattr(obj, "__module__", None) or "?"
    return f"{module}:{getattr(obj, '__qualname__', type(obj).__qualname__)}"


class Registry(Generic[F]):
    """Named factories of one kind, e.g. agents or perturbations.

    ``validate(name, obj)`` returns ``obj`` as a factory of this kind or raises ConfigError
    saying what is wrong; the default asks only for something callable.
    """

    def __init__(
        self,
        kind: str,
        group: str,
        validate: Callable[[str, object], F] | None = None,
    ):
        self.kind = kind
        self.group = group
        # Without a validator a registry asks only for something callable (F is then a
        # callable type, which the caller's annotation states).
        self._validate: Callable[[str, object], F] = validate or cast(
            "Callable[[str, object], F]", partial(_callable, kind)
        )
        self._validates_paths = validate is not None
        self._items: dict[str, F] = {}
        self._broken: list[BrokenEntryPoint] = []
        self._loaded = False

    def register(self, name: str | None = None) -> Callable[[F], F]:
        def decorate(factory: F) -> F:
            return self.add(name or str(getattr(factory, "__name__", "")), factory)

        return decorate

    def add(self, name: str, obj: object) -> F:
        """Validate ``obj`` and register it under ``name``; a name is taken once."""
        if not name:
            raise ConfigError(f"a {self.kind} needs a name to register under")
        factory = self._validate(name, obj)
        known = self._items.get(name)
        # The same definition imported again (a reloaded module, a file loaded twice) replaces
        # itself; a different one under a taken name is a conflict the user must resolve.
        if known is not None and qualified_name(known) != qualified_name(factory):
            raise ConfigError(
                f"{self.kind} name {name!r} is taken by {qualified_name(known)}; "
                f"{qualified_name(factory)} needs another name"
            )
        self._items[name] = factory
        try:
            factory.__chaoseval_name__ = name  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            pass  # a builtin or slotted object: the registry key is enough
        return factory

    def _load_entry_points(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        _, self._broken = collect_entry_points(self.group, lambda ep: self.add(ep.name, ep.load()))

    def _load_named(self, name: str) -> None:
        """Load only the entry point that declares ``name`` (chaoseval's own first, as the
        full load orders them): a run naming one agent and two plugins need not import every
        installed one (the OpenAI SDK alone is ~0.8 s of CPU). One that fails is left for the
        full load, which records it as broken with its error."""
        # Named first, sorted after: sorting reads each entry point's distribution name, which
        # importlib.metadata parses from its METADATA file each time (~1 ms an entry point).
        named = [ep for ep in entry_points(group=self.group) if ep.name == name]
        if not named:
            return
        ep = named[0] if len(named) == 1 else min(named, key=_not_chaosevals)
        try:
            self.add(ep.name, ep.load())
        except Exception:  # the full load below says what broke
            return

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._items)

    def items(self) -> Iterator[tuple[str, F]]:
        self._load_entry_points()
        yield from sorted(self._items.items())

    def broken(self) -> list[BrokenEntryPoint]:
        """Installed entry points of this group that failed to load or validate."""
        self._load_entry_points()
        return sorted(self._broken, key=lambda b: b.name)

    def get(self, name: str) -> F:
        if ":" in name:
            obj = import_object(name)
            # An import path is checked by a registry's own validator; the callable default
            # leaves it to the caller (a YAML `function:` may name a @tool-built ToolSpec).
            return self._validate(name, obj) if self._validates_paths else cast(F, obj)
        if name not in self._items and not self._loaded:
            self._load_named(name)
        if name in self._items:
            return self._items[name]
        self._load_entry_points()
        if name in self._items:
            return self._items[name]
        for broken in self._broken:  # a working definition of the name was found first
            if broken.name == name:
                raise ConfigError(f"{self.kind} {name!r} is installed but {broken.describe()}")
        close = difflib.get_close_matches(name, self._items, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        known = ", ".join(sorted(self._items)) or "none"
        raise ConfigError(
            f"unknown {self.kind} {name!r}{hint} (known: {known}; or give 'module:factory')"
        )
