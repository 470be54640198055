"""Noise floor and run sizing of one cell: how much of a difference this run can see."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import Records
from chaoseval.analysis.stats import NoiseFloor, noise_floor_counts
from chaoseval.store.columns import as_group

__all__ = ["SIZING_TARGETS", "RunNoise", "Sizing", "run_noise"]

SIZING_TARGETS = (0.05, 0.10)  # half-widths of a 95% interval the sizing answers for


@dataclass(frozen=True)
class Sizing:
    """Two ways to reach an interval of ``half_width``: more trials on these tasks (None when
    no number of trials is enough: the spread between tasks dominates), or more tasks."""

    half_width: float
    trials_per_task_with_these_tasks: int | None
    tasks_with_this_many_trials: int
    trials_per_task: int

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunNoise:
    """Noise floor and run sizing of one cell (the clean cell is the run's headline)."""

    cell: str
    floor: NoiseFloor | None
    note: str | None
    sizing: list[Sizing] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        f = self.floor
        return {
            "cell": self.cell,
            "note": self.note,
            "tasks": f.tasks if f else None,
            "flips": f.flips if f else None,
            "flip_share": f.flip_share if f else None,
            "icc": f.icc if f else None,
            "between_var": f.between_var if f else None,
            "within_var": f.within_var if f else None,
            "se_mean": f.se_mean if f else None,
            "mde_paired": f.mde if f else None,
            "mde_unpaired": f.mde_unpaired if f else None,
            "sizing": [s.to_json() for s in self.sizing],
        }


def run_noise(cell: str, records: Records) -> RunNoise:
    g = as_group(records)
    scored = g["status"] != 2
    passed = (g["status"] == 0).astype(np.int64)
    sc = g["scenario"]
    names = g.t.vocab["scenario"]
    tasks = sorted({names[c] for c in np.unique(sc).tolist()})
    code = {n: i for i, n in enumerate(names)}
    # Each task's scored outcomes in row order: one sort, not a mask over every row per task
    # (that was tasks x rows: 10^10 at 100k tasks).
    # Each task's scored trials and successes by one count over the rows (an array per task
    # was 300k numpy calls at 100k tasks), in task order as noise_floor reads them.
    width = len(names)
    n_code = np.bincount(sc[scored], minlength=width).astype(np.float64)
    c_code = np.bincount(sc[scored], weights=passed[scored], minlength=width)
    codes = np.array([code[t] for t in tasks], dtype=np.int64)
    n_i, c_i = n_code[codes], c_code[codes]
    has = n_i > 0
    try:
        floor = noise_floor_counts(n_i[has], c_i[has], int((~has).sum()))
    except ValueError as exc:
        return RunNoise(cell, None, str(exc))
    per_task = max(1, round(floor.mean_trials))
    sizing = [
        Sizing(h, floor.trials_needed(h, floor.tasks), floor.tasks_needed(h, per_task), per_task)
        for h in SIZING_TARGETS
    ]
    return RunNoise(cell, floor, None, sizing)
