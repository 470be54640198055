"""What ``chaoseval run --resume`` keeps of a journal, read from its columns."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from chaoseval.model.records import TrialRecord
from chaoseval.store.columns import Trials

__all__ = ["KeptTrials"]


class KeptTrials(Mapping[str, TrialRecord]):
    """The trials a resumed run keeps (every one that is not ``not_evaluable``), by trial id.

    Built from the columns: a record is read from its line only when asked for (a run that
    keeps its records in memory); what the kept trials spent comes from the columns."""

    def __init__(self, t: Trials | None = None) -> None:
        self._t = t
        self._rows: dict[str, int] = {}
        if t is not None:
            for row in np.flatnonzero(t.col["status"] != 2).tolist():
                self._rows[t.trial_id(row)] = row

    def __getitem__(self, trial_id: str) -> TrialRecord:
        assert self._t is not None  # an empty mapping has no keys
        return self._t.record(self._rows[trial_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, trial_id: object) -> bool:
        return trial_id in self._rows

    def spent(self) -> Iterator[tuple[float, int]]:
        """(cost, tokens) of each kept trial."""
        if self._t is None:
            return iter(())
        rows = list(self._rows.values())
        costs, tokens = self._t.col["cost"][rows].tolist(), self._t.col["tokens"][rows].tolist()
        return zip(costs, tokens, strict=True)
