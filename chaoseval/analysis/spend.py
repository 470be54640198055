"""What a run spent, beside a comparison: more trials, calls or tokens can buy reliability
without resilience, so ``compare`` shows each harness's budget next to its verdict."""

from __future__ import annotations

from dataclasses import dataclass

from chaoseval.analysis.aggregate import Records
from chaoseval.analysis.process import fsum
from chaoseval.store.columns import as_group

__all__ = ["Budget"]


@dataclass(frozen=True)
class Budget:
    """What a run spent: more trials, calls or tokens can buy reliability without resilience."""

    label: str
    trials: int
    scored: int
    model_calls: int
    tool_calls: int
    tokens: int
    cost: float
    wall_seconds: float
    sim_seconds: float

    @classmethod
    def of(cls, label: str, records: Records) -> Budget:
        g = as_group(records)
        return cls(
            label=label,
            trials=len(g),
            scored=int((g["status"] != 2).sum()),
            model_calls=int(g["model_calls"].sum()),
            tool_calls=int(g["tool_calls"].sum()),
            tokens=int(g["tokens"].sum()),
            # math.fsum's exact sums (process.fsum: from the arrays a block at a time).
            cost=fsum(g["cost"]),
            wall_seconds=fsum(g["wall_seconds"]),
            sim_seconds=fsum(g["sim_seconds"]),
        )

    ROWS = (
        ("trials", "trials"),
        ("scored", "scored trials"),
        ("model_calls", "model calls"),
        ("tool_calls", "tool calls"),
        ("tokens", "tokens"),
        ("cost", "cost"),
        ("wall_seconds", "wall time (s)"),
        ("sim_seconds", "sim time (s)"),
    )
