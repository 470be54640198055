"""What each trial spent and how it ended under a degradation contract: the values gate rules
such as ``mean(tool_calls) <= 6``, ``p95(latency) <= 30`` or ``graceful[timeout] == 1.0`` read.

A pure function of the journal's columns. Trials that are not evaluable (a harness error, not the
agent's doing) are left out, as they are of every other metric.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from chaoseval.analysis.aggregate import Records
from chaoseval.store.columns import Group, as_group

__all__ = [
    "AGGREGATES",
    "METRICS",
    "Graceful",
    "Measures",
    "TrialMeasures",
    "aggregate",
    "graceful",
    "graceful_by_cell",
    "measure",
]

# steps: every action in the trajectory (tool calls, model calls, page reads, memory reads);
# tool_calls: the tool calls alone; latency: the trial's duration on its own clock (virtual
# for simulated agents, real otherwise), not the harness's wall time.
# user_turns: the agent's messages to a conversational scenario's user.
METRICS = ("steps", "tool_calls", "tokens", "cost", "latency", "user_turns")
AGGREGATES = ("mean", "p95", "max")
Outcome = Literal["recovered", "fell_back", "failed"]


@dataclass(frozen=True)
class TrialMeasures:
    trial_id: str
    scenario: str
    cell: str
    steps: int
    tool_calls: int
    tokens: int
    cost: float
    latency: float
    user_turns: int
    # None: no fault a degradation contract names reached the agent. Otherwise how it ended:
    # "recovered" (the normal checks passed anyway), "fell_back" (they failed but a contract
    # held: the degraded outcome the scenario declares correct) or "failed".
    outcome: Outcome | None = None

    def value(self, metric: str) -> float:
        return float(getattr(self, metric))


_COLUMNS = {
    "steps": "actions",
    "tool_calls": "tool_calls",
    "tokens": "tokens",
    "cost": "cost",
    "latency": "sim_seconds",
    "user_turns": "user_turns",
}
_OUTCOMES: tuple[Outcome, ...] = ("recovered", "fell_back", "failed")


@dataclass(frozen=True)
class Measures:
    """The scored trials' measures as columns (rows of a journal's table)."""

    g: Group

    def __len__(self) -> int:
        return len(self.g)

    def select(self, cell: str) -> Measures:
        """The trials of one cell."""
        return Measures(self.g.where(self.g["cell"] == _code(self.g, "cell", cell)))

    def values(self, metric: str) -> list[float]:
        return [float(x) for x in self.g[_COLUMNS[metric]].tolist()]

    def outcomes(self) -> list[Outcome]:
        """How each trial a contract applied to ended, in journal order."""
        return [_OUTCOMES[o] for o in self.g["outcome"].tolist() if o >= 0]

    def cells(self) -> list[str]:
        """The cells in journal order, each once."""
        return list(dict.fromkeys(self.g.names("cell")))

    def __iter__(self) -> Iterator[TrialMeasures]:
        t, cols = self.g.t, {m: self.values(m) for m in METRICS}
        scen, cell, out = self.g.names("scenario"), self.g.names("cell"), self.g["outcome"].tolist()
        for i, row in enumerate(self.g.rows.tolist()):
            yield TrialMeasures(
                t.trial_id(row), scen[i], cell[i],
                int(cols["steps"][i]), int(cols["tool_calls"][i]), int(cols["tokens"][i]),
                cols["cost"][i], cols["latency"][i], int(cols["user_turns"][i]),
                _OUTCOMES[out[i]] if out[i] >= 0 else None,
            )  # fmt: skip


def _code(g: Group, column: str, name: str) -> int:
    vocab = g.t.vocab[column]
    return vocab.index(name) if name in vocab else -2


def measure(records: Records) -> Measures:
    """The measures of the scored trials among ``records``."""
    g = as_group(records)
    return Measures(g.where(g["status"] != 2))


def aggregate(how: str, values: Sequence[float]) -> float | None:
    """``mean``, ``p95`` (linear interpolation, as numpy's default quantile) or ``max`` (a
    bound every trial must keep, such as a path's length); None if empty."""
    if not values:
        return None
    if how == "mean":
        return math.fsum(values) / len(values)
    if how == "p95":
        return float(np.quantile(values, 0.95))
    if how == "max":
        return float(max(values))
    raise ValueError(f"unknown aggregate {how!r}; one of {', '.join(AGGREGATES)}")


@dataclass(frozen=True)
class Graceful:
    """One cell's correct-degradation rate: of the trials in which a fault a scenario's
    degradation contract names was delivered, the share that ended correctly."""

    cell: str
    eligible: int  # trials with such a fault
    recovered: int  # the normal checks passed anyway
    # The normal checks failed but the contract held: the fallback the scenario declares
    # correct. Not "degraded": that word is a cell's status (chaoseval.analysis.status).
    fell_back: int
    failed: int

    @property
    def rate(self) -> float | None:
        return (self.recovered + self.fell_back) / self.eligible if self.eligible else None

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "rate": self.rate}


def graceful_by_cell(measures: Measures) -> dict[str, Graceful]:
    """Each cell in which a contract applied to some trial, with its rate (first-seen order)."""
    hit = Measures(measures.g.where(measures.g["outcome"] >= 0))
    return {c: graceful(c, measures.select(c)) for c in hit.cells()}


def graceful(cell: str, measures: Measures | Iterable[TrialMeasures]) -> Graceful:
    """The rate over ``measures`` (pass them pooled over several cells to pool the rate)."""
    if isinstance(measures, Measures):
        ends = measures.outcomes()
    else:
        ends = [m.outcome for m in measures if m.outcome is not None]
    return Graceful(
        cell, len(ends), ends.count("recovered"), ends.count("fell_back"), ends.count("failed")
    )
