"""A trial's world: its own tables, temp directory, operation ids and clock.

Every trial gets a fresh World copied from its scenario's :class:`WorldTemplate`, so repeats
start from the same state and nothing one trial does can leak into the next. The template is
built once per (scenario, world seed): the world seed is the same for every trial and cell of
a scenario, so building it again (faker, freezegun) would only repeat the same work.
"""

from __future__ import annotations

import copy
import itertools
import pickle
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, overload

from chaoseval.errors import ToolError
from chaoseval.model.clock import Clock


@dataclass
class Write:
    """One mutation of a table, kept so the judge can check forbidden writes."""

    table: str
    op: str
    key: Any
    tool: str | None


Tables = dict[str, list[dict[str, Any]]]


class _LazyTempDir:
    """``world.tmpdir``: made on first use. Most scenarios never touch it, and making and
    removing a directory per trial costs milliseconds on a disk-backed /tmp."""

    @overload
    def __get__(self, world: None, owner: type[World]) -> None: ...

    @overload
    def __get__(self, world: World, owner: type[World]) -> Path: ...

    def __get__(self, world: World | None, owner: type[World]) -> Path | None:
        if world is None:
            return None  # the dataclass default: made lazily
        made: Path | None = world.__dict__.get(_TMPDIR)
        if made is None and _SHARES in world.__dict__:
            shared: World = world.__dict__[_SHARES]
            return shared.tmpdir  # made on (and removed with) that world
        if made is None:
            made = world.__dict__[_TMPDIR] = Path(tempfile.mkdtemp(prefix="chaoseval-trial-"))
            world.__dict__[_OWNED] = True
        return made

    def __set__(self, world: World, value: Path | _LazyTempDir | None) -> None:
        # __init__ passes the field's default, this descriptor itself: not made yet.
        world.__dict__[_TMPDIR] = None if isinstance(value, _LazyTempDir) else value


# Kept in the instance dict, not dataclass fields.
_TMPDIR, _OWNED, _SHARES = "_tmpdir", "_owns_tmpdir", "_shares_tmpdir_of"


@dataclass
class World:
    tables: Tables
    clock: Clock
    seed: int
    # A Path when read. Out of repr and ==: both read every field, and a traceback or a log
    # line showing a world made a temp dir nobody removed (one per repr after release).
    tmpdir: _LazyTempDir = field(default=_LazyTempDir(), repr=False, compare=False)
    givens: dict[str, Any] = field(default_factory=dict)
    writes: list[Write] = field(default_factory=list)
    _opids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    current_tool: str | None = None
    clock_reads: int = 0
    # Called with a channel name when the world's time is read: delivers clock-skew faults.
    on_read: Callable[[str], None] | None = None

    # --- reading ---------------------------------------------------------------------------

    def table(self, name: str) -> list[dict[str, Any]]:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"world has no table {name!r} (tables: {sorted(self.tables)})") from None

    def find(self, table: str, **where: Any) -> list[dict[str, Any]]:
        return [row for row in self.table(table) if all(row.get(k) == v for k, v in where.items())]

    def get(self, table: str, key: str, value: Any, *, what: str | None = None) -> dict[str, Any]:
        """One row by key, or a ToolError the agent sees (the world said 'not found')."""
        rows = self.find(table, **{key: value})
        if not rows:
            raise ToolError(f"{what or table} {value!r} not found")
        return rows[0]

    def now(self) -> datetime:
        self.clock_reads += 1
        if self.on_read is not None:
            self.on_read("clock")
        return self.clock.now()

    # --- writing ---------------------------------------------------------------------------

    def next_id(self, prefix: str) -> str:
        """Operation ids are per trial, so repeats see identical ids."""
        return f"{prefix}-{next(self._opids):04d}"

    def insert(self, table: str, row: dict[str, Any], key: str = "id") -> dict[str, Any]:
        self.tables.setdefault(table, []).append(row)
        self.writes.append(Write(table, "insert", row.get(key), self.current_tool))
        return row

    def update(self, table: str, key: str, value: Any, **changes: Any) -> dict[str, Any]:
        row = self.get(table, key, value)
        row.update(changes)
        self.writes.append(Write(table, "update", value, self.current_tool))
        return row

    def delete(self, table: str, key: str, value: Any) -> None:
        row = self.get(table, key, value)
        self.table(table).remove(row)
        self.writes.append(Write(table, "delete", value, self.current_tool))

    def snapshot(self) -> Tables:
        return copy.deepcopy(self.tables)

    def over(self, tables: Tables) -> World:
        """This world's clock, seed, givens and temp dir over other tables (the judge reads
        the initial tables so). The temp dir is this world's, made only if read: the judge
        forced one per trial (a mkdir and an rmtree for nothing, seconds at a time when the
        disk is busy)."""
        other = World(tables=tables, clock=self.clock, seed=self.seed, givens=self.givens)
        made = self.__dict__.get(_TMPDIR)
        if made is None:
            other.__dict__[_SHARES] = self
        else:
            other.tmpdir = made
        return other

    def release(self) -> None:
        """Remove the temp dir if the trial made one, on a background thread: a blocking
        ``rmdir`` on the event loop would stall every other trial."""
        if self.__dict__.pop(_OWNED, False):
            _reaper().submit(shutil.rmtree, self.__dict__[_TMPDIR], True)

    # ``with world:`` releases it at the end, even when the trial fails.
    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


_REAPER: ThreadPoolExecutor | None = None


def _reaper() -> ThreadPoolExecutor:
    global _REAPER
    if _REAPER is None:  # made on first use: a forked worker process starts its own
        _REAPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chaoseval-rmtree")
    return _REAPER


def reset_after_fork() -> None:
    """A forked worker inherits the parent's executor object but not its thread."""
    global _REAPER
    _REAPER = None


@contextmanager
def fresh_world(tables: Tables, clock: Clock, seed: int, givens: dict[str, Any]) -> Iterator[World]:
    """A World with deep-copied tables; its temp dir (if used) is removed even if the trial
    fails."""
    world = World(
        tables=copy.deepcopy(tables), clock=clock, seed=seed, givens=copy.deepcopy(givens)
    )
    try:
        yield world
    finally:
        world.release()


class WorldTemplate:
    """A scenario's initial tables and givens (and the instruction rendered from them),
    built once and copied for every trial.

    The copy is a pickle round trip of data pickled once: several times faster than
    ``copy.deepcopy`` on rows of dicts, with the same result for plain data. Data pickle
    refuses falls back to ``deepcopy``."""

    def __init__(self, tables: Tables, givens: dict[str, Any], instruction: str):
        self.instruction = instruction
        self._data = (tables, givens)
        try:
            self._blob: bytes | None = pickle.dumps(self._data, protocol=pickle.HIGHEST_PROTOCOL)
            self._givens_blob = pickle.dumps(givens, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # a lambda or a lock in the world: deepcopy handles what it can
            self._blob = None

    def _copy(self) -> tuple[Tables, dict[str, Any]]:
        if self._blob is not None:
            copied: tuple[Tables, dict[str, Any]] = pickle.loads(self._blob)
            return copied
        return copy.deepcopy(self._data)

    @property
    def tables(self) -> Tables:
        """The initial tables themselves (read only: every trial works on a copy)."""
        return self._data[0]

    def givens(self) -> dict[str, Any]:
        """A copy of the givens of its own (the agent's task), apart from the world's."""
        if self._blob is not None:
            copied: dict[str, Any] = pickle.loads(self._givens_blob)
            return copied
        return copy.deepcopy(self._data[1])

    def world(self, clock: Clock, seed: int) -> World:
        """A fresh World of its own copies, to use as ``with template.world(...) as world:``
        (released at the end of the block)."""
        tables, givens = self._copy()
        return World(tables=tables, clock=clock, seed=seed, givens=givens)


_TEMPLATES: OrderedDict[tuple[int, int], tuple[object, WorldTemplate]] = OrderedDict()
TEMPLATES_KEPT = 256  # scenarios whose worlds stay built; a run beyond that rebuilds some


def world_template(
    owner: object, seed: int, build: Callable[[], tuple[Tables, dict[str, Any], str]]
) -> WorldTemplate:
    """The template of ``owner`` (a scenario) at ``seed``, built by ``build()`` on first use.

    Keyed by identity, and the owner is kept with its template so its id cannot be reused
    by another object while the entry lives. A build that raises is not cached: every trial
    reports it, as before."""
    key = (id(owner), seed)
    hit = _TEMPLATES.get(key)
    if hit is not None and hit[0] is owner:
        _TEMPLATES.move_to_end(key)
        return hit[1]
    template = WorldTemplate(*build())
    _TEMPLATES[key] = (owner, template)
    if len(_TEMPLATES) > TEMPLATES_KEPT:
        _TEMPLATES.popitem(last=False)
    return template
