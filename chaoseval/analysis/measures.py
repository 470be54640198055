"""What each trial spent and how it ended under a degradation contract: the values gate rules
such as ``mean(tool_calls) <= 6``, ``p95(latency) <= 30`` or ``graceful[timeout] == 1.0`` read.

A pure function of the records. Trials that are not evaluable (a harness error, not the
agent's doing) are left out, as they are of every other metric.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from chaoseval.model.records import TrialRecord

__all__ = [
    "AGGREGATES",
    "METRICS",
    "Graceful",
    "TrialMeasures",
    "aggregate",
    "graceful",
    "graceful_by_cell",
    "measure",
]

# steps: every action in the trajectory (tool calls, model calls, page reads, memory reads);
# tool_calls: the tool calls alone; latency: the trial's duration on its own clock (virtual
# for simulated agents, real otherwise), not the harness's wall time.
METRICS = ("steps", "tool_calls", "tokens", "cost", "latency")
AGGREGATES = ("mean", "p95")
Outcome = Literal["recovered", "degraded", "failed"]
_ACTIONS = frozenset({"tool", "model", "observation", "memory"})


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
    # None: no fault a degradation contract names reached the agent. Otherwise how it ended:
    # "recovered" (the normal checks passed anyway), "degraded" (they failed but a contract
    # held: the degraded outcome the scenario declares correct) or "failed".
    outcome: Outcome | None = None

    def value(self, metric: str) -> float:
        return float(getattr(self, metric))


def measure(records: Iterable[TrialRecord]) -> list[TrialMeasures]:
    out = []
    for r in records:
        if not r.scored:
            continue
        out.append(
            TrialMeasures(
                trial_id=r.trial_id,
                scenario=r.scenario,
                cell=r.cell,
                steps=sum(s.kind in _ACTIONS for s in r.trajectory.steps),
                tool_calls=len(r.trajectory.tool_steps()),
                tokens=r.usage.input_tokens + r.usage.output_tokens,
                cost=r.usage.cost,
                latency=r.sim_seconds,
                outcome=_outcome(r) if r.contracts else None,
            )
        )
    return out


def _outcome(r: TrialRecord) -> Outcome:
    if not r.passed:
        return "failed"
    return "recovered" if all(c.passed for c in r.checks) else "degraded"


def aggregate(how: str, values: Sequence[float]) -> float | None:
    """``mean`` or ``p95`` (linear interpolation, as numpy's default quantile); None if empty."""
    if not values:
        return None
    if how == "mean":
        return math.fsum(values) / len(values)
    if how == "p95":
        return float(np.quantile(values, 0.95))
    raise ValueError(f"unknown aggregate {how!r}; one of {', '.join(AGGREGATES)}")


@dataclass(frozen=True)
class Graceful:
    """One cell's correct-degradation rate: of the trials in which a fault a scenario's
    degradation contract names was delivered, the share that ended correctly."""

    cell: str
    eligible: int  # trials with such a fault
    recovered: int  # the normal checks passed anyway
    degraded: int  # the normal checks failed but the contract held: a correct degradation
    failed: int

    @property
    def rate(self) -> float | None:
        return (self.recovered + self.degraded) / self.eligible if self.eligible else None

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "rate": self.rate}


def graceful_by_cell(measures: Sequence[TrialMeasures]) -> dict[str, Graceful]:
    """Each cell in which a contract applied to some trial, with its rate (first-seen order)."""
    cells = dict.fromkeys(m.cell for m in measures if m.outcome is not None)
    return {c: graceful(c, [m for m in measures if m.cell == c]) for c in cells}


def graceful(cell: str, measures: Iterable[TrialMeasures]) -> Graceful:
    """The rate over ``measures`` (pass them pooled over several cells to pool the rate)."""
    ends = [m.outcome for m in measures if m.outcome is not None]
    return Graceful(
        cell, len(ends), ends.count("recovered"), ends.count("degraded"), ends.count("failed")
    )
