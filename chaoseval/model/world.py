"""A trial's world: its own tables, temp directory, operation ids and clock.

Every trial builds a fresh World from the scenario and the run's world seed, so repeats
start from the same state and nothing one trial does can leak into the next.
"""

from __future__ import annotations

import copy
import itertools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from chaoseval.errors import ToolError
from chaoseval.model.clock import Clock


@dataclass
class Write:
    """One mutation of a table, kept so the judge can check forbidden writes."""

    table: str
    op: str
    key: Any
    tool: str | None


@dataclass
class World:
    tables: dict[str, list[dict[str, Any]]]
    clock: Clock
    seed: int
    tmpdir: Path
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

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return copy.deepcopy(self.tables)


@contextmanager
def fresh_world(
    tables: dict[str, list[dict[str, Any]]],
    clock: Clock,
    seed: int,
    givens: dict[str, Any],
) -> Iterator[World]:
    """A World with deep-copied tables and its own temp dir, removed even if the trial fails."""
    tmp = Path(tempfile.mkdtemp(prefix="chaoseval-trial-"))
    try:
        yield World(
            tables=copy.deepcopy(tables),
            clock=clock,
            seed=seed,
            tmpdir=tmp,
            givens=copy.deepcopy(givens),
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
