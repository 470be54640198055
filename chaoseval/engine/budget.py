"""Run budgets for real models: ``--budget-cost``, ``--budget-tokens`` and ``--budget-trials``.

They are run totals, counted over every recorded trial, those a ``--resume`` keeps included.
Once one is reached no new trial starts; the trials in flight finish and every recorded trial
is kept, so the same command with ``--resume`` (and a larger budget) carries on.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaoseval.errors import ConfigError
from chaoseval.model.records import TrialRecord


@dataclass
class Budget:
    cost: float | None = None  # in the price table's currency (USD by default)
    tokens: int | None = None  # input + output tokens
    trials: int | None = None  # recorded trials
    spent_cost: float = 0.0
    spent_tokens: int = 0
    spent_trials: int = 0
    skipped: int = 0  # trials not started because the budget was reached

    def __post_init__(self) -> None:
        if any(b is not None and b <= 0 for b in (self.cost, self.tokens, self.trials)):
            raise ConfigError("--budget-cost, --budget-tokens and --budget-trials must be above 0")

    def add(self, record: TrialRecord) -> None:
        self.spend(record.usage.cost, record.usage.input_tokens + record.usage.output_tokens)

    def spend(self, cost: float, tokens: int) -> None:
        self.spent_cost += cost
        self.spent_tokens += tokens
        self.spent_trials += 1

    @property
    def reached(self) -> str | None:
        """What was reached, in words, or None while there is budget left."""
        if self.tokens is not None and self.spent_tokens >= self.tokens:
            return f"--budget-tokens {self.tokens} (spent {self.spent_tokens})"
        if self.trials is not None and self.spent_trials >= self.trials:
            return f"--budget-trials {self.trials} (recorded {self.spent_trials})"
        if self.cost is not None and self.spent_cost >= self.cost:
            return f"--budget-cost {self.cost:g} (spent {self.spent_cost:.4f})"
        return None
