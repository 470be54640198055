"""The trial matrix, (clean + cells) x scenarios x trials, as a sequence made on demand.

A run of a million trials never holds a million TrialPlan objects: plan ``i`` is made from its
index when an executor asks for it (an index is also what the process and Ray executors send
their workers), and a resumed run keeps only the indices still to run, 8 bytes each.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from typing import overload

from chaoseval.engine.trial import TrialPlan
from chaoseval.model.records import Cell, make_trial_id
from chaoseval.model.scenario import Scenario


class Plans(Sequence[TrialPlan]):
    """The matrix's plans in run order: cells outermost, then scenarios, then repeats."""

    def __init__(
        self,
        cells: Sequence[Cell],
        scenarios: Sequence[Scenario],
        trials: int,
        keep: array[int] | None = None,
    ):
        self._cells, self._scenarios, self._trials = tuple(cells), tuple(scenarios), trials
        self._keep = keep  # the matrix positions in this sequence; None: every one

    def __len__(self) -> int:
        if self._keep is not None:
            return len(self._keep)
        return len(self._cells) * len(self._scenarios) * self._trials

    @overload
    def __getitem__(self, i: int) -> TrialPlan: ...

    @overload
    def __getitem__(self, i: slice) -> list[TrialPlan]: ...

    def __getitem__(self, i: int | slice) -> TrialPlan | list[TrialPlan]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"plan {i} of {n}")
        return self._at(i if self._keep is None else self._keep[i])

    def _at(self, position: int) -> TrialPlan:
        return TrialPlan(*self._coords(position))

    def _coords(self, position: int) -> tuple[Scenario, Cell, int]:
        """The scenario, cell and repeat at a matrix position (cells outermost)."""
        rest, index = divmod(position, self._trials)
        cell, scenario = divmod(rest, len(self._scenarios))
        return self._scenarios[scenario], self._cells[cell], index

    def __iter__(self) -> Iterator[TrialPlan]:
        if self._keep is not None:
            return map(self._at, self._keep)
        return (
            TrialPlan(s, c, i)
            for c in self._cells
            for s in self._scenarios
            for i in range(self._trials)
        )

    def without(self, done: Container[str]) -> Plans:
        """The plans whose trial ids are not in ``done`` (a resumed journal's trials)."""
        if not done:
            return self
        keep = array("q", (p for p in self._positions() if self._trial_id(p) not in done))
        return Plans(self._cells, self._scenarios, self._trials, keep)

    def select(self, wanted: Callable[[str, str, int], bool], done: Container[str]) -> Plans:
        """The plans whose (cell, scenario id, index) ``wanted`` takes and whose trial ids are
        not in ``done``: a sequential run's round (chaoseval.engine.sequential)."""
        keep = array("q")
        for p in self._positions():
            scenario, cell, index = self._coords(p)
            if wanted(cell.name, scenario.id, index) and self._trial_id(p) not in done:
                keep.append(p)
        return Plans(self._cells, self._scenarios, self._trials, keep)

    def _positions(self) -> Iterable[int]:
        return range(len(self)) if self._keep is None else self._keep

    def _trial_id(self, position: int) -> str:
        scenario, cell, index = self._coords(position)
        return make_trial_id(scenario.id, cell.name, index)
