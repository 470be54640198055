"""Adversarial search: the smallest perturbation schedule that makes an agent fail.

Hypothesis draws schedules (a stack of faults: plugin, target tool, trigger, probability and
the plugin's own parameters), each is run for a few trials on the virtual clock, and a schedule
"breaks" the agent when its trials fail because of a delivered fault. Hypothesis then shrinks
the first breaking schedule: fewer faults, the first tools and triggers in the strategy's order,
probability 1, plugin parameters at their defaults. The shrunk schedule is confirmed on fresh
trials (a find that does not hold up is ruled out and the search runs again) and saved as a
spec that ``chaoseval run -p spec.json`` reads as one matrix cell.

Plugins are discovered from the perturbation registry and their ``Params`` models, so a plugin
a colleague adds joins the search with no change here.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from chaoseval.engine.loops import run_loop
from chaoseval.engine.runner import agent_clock
from chaoseval.engine.trial import TrialPlan, run_trial
from chaoseval.errors import ChaosevalError, ConfigError
from chaoseval.investigate.schedules import (
    schedule_strategy,
    searchable_plugins,
    target_tools,
)
from chaoseval.model.cells import cell_name
from chaoseval.model.records import CLEAN, Cell, ModelSettings, PerturbationSpec, TrialRecord
from chaoseval.model.scenario import Scenario
from chaoseval.model.seeding import derive_seed
from chaoseval.seams.agent import AgentAdapter


@dataclass
class Evaluation:
    """A schedule's outcome over a batch of trials."""

    cell: Cell
    records: list[TrialRecord]

    @property
    def scored(self) -> list[TrialRecord]:
        return [r for r in self.records if r.scored]

    @property
    def broken(self) -> int:
        """Trials that failed and received at least one fault: failures the schedule caused."""
        return sum(1 for r in self.scored if r.status == "failed" and r.faults_delivered())

    @property
    def failure_rate(self) -> float:
        scored = self.scored
        return self.broken / len(scored) if scored else 0.0

    @property
    def faults_delivered(self) -> int:
        return sum(r.faults_delivered() for r in self.records)


@dataclass
class SearchResult:
    scenario: str
    agent: str
    seed: int
    cell: Cell
    search_trials: int
    examples: int  # schedules evaluated, shrinking included
    confirm_seed: int
    confirmation: Evaluation
    clean_failure_rate: float
    confirm_rate: float = 0.8
    rejected: list[tuple[str, float]] = field(default_factory=list)  # finds that did not confirm
    history: list[tuple[str, float]] = field(default_factory=list)

    @property
    def confirmed(self) -> bool:
        return self.confirmation.failure_rate >= self.confirm_rate - 1e-9

    def spec(self) -> dict[str, Any]:
        """The saved form: a cell ``chaoseval run -p FILE.json`` accepts, with provenance."""
        conf = self.confirmation
        return {
            "name": self.cell.name,
            "perturbations": [p.model_dump() for p in self.cell.perturbations],
            "found_by": {
                "command": "chaoseval search",
                "agent": self.agent,
                "scenario": self.scenario,
                "seed": self.seed,
                "search_trials": self.search_trials,
                "examples": self.examples,
                "rejected_on_confirmation": [
                    {"cell": name, "failure_rate": round(rate, 4)} for name, rate in self.rejected
                ],
                "confirm_seed": self.confirm_seed,
                "confirm_trials": len(conf.scored),
                "confirmed_failures": conf.broken,
                "confirmed_failure_rate": round(conf.failure_rate, 4),
                "confirmed": self.confirmed,
                "clean_failure_rate": round(self.clean_failure_rate, 4),
            },
        }

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.spec(), indent=2) + "\n")


# --- evaluation ---------------------------------------------------------------------------


def make_cell(specs: Sequence[PerturbationSpec]) -> Cell:
    return Cell(name=cell_name(list(specs)), perturbations=list(specs))


async def _evaluate(
    scenario: Scenario,
    cell: Cell,
    agent: AgentAdapter,
    agent_name: str,
    model: ModelSettings,
    seed: int,
    trials: int,
    wall_timeout: float,
) -> Evaluation:
    records = []
    clock_mode = agent_clock(agent)
    for i in range(trials):
        records.append(
            await run_trial(
                TrialPlan(scenario, cell, i),
                agent,
                agent_name=agent_name,
                model=model,
                clock_mode=clock_mode,
                run_id="search",
                run_seed=seed,
                wall_timeout=wall_timeout,
            )
        )
    return Evaluation(cell, records)


def evaluate(
    scenario: Scenario,
    cell: Cell,
    agent: AgentAdapter,
    *,
    agent_name: str,
    model: ModelSettings | None = None,
    seed: int = 0,
    trials: int = 3,
    wall_timeout: float = 30.0,
) -> Evaluation:
    """Run ``trials`` trials of one cell, sequentially (the virtual clock makes this fast)."""
    return run_loop(  # a run's own event loop
        _evaluate,
        scenario,
        cell,
        agent,
        agent_name,
        model or ModelSettings(),
        seed,
        trials,
        wall_timeout,
    )


@dataclass
class _Searcher:
    """One search's state: the schedules tried (cached by cell name), the finds ruled out on
    confirmation, and the failure rate of each schedule in the order tried."""

    scenario: Scenario
    agent: AgentAdapter
    agent_name: str
    model: ModelSettings
    seed: int
    trials: int
    wall: float
    min_failure_rate: float
    on_example: Callable[[Cell, Evaluation], None] | None = None
    cache: dict[str, Evaluation] = field(default_factory=dict)
    blocked: set[str] = field(default_factory=set)
    history: list[tuple[str, float]] = field(default_factory=list)

    def run(self, cell: Cell, seed: int, trials: int) -> Evaluation:
        return evaluate(
            self.scenario,
            cell,
            self.agent,
            agent_name=self.agent_name,
            model=self.model,
            seed=seed,
            trials=trials,
            wall_timeout=self.wall,
        )

    def breaks(self, schedule: list[PerturbationSpec]) -> bool:
        """Hypothesis' condition: the schedule's trials fail from a delivered fault often
        enough (a schedule ruled out on confirmation never counts again)."""
        cell = make_cell(schedule)
        result = self.cache.get(cell.name)
        if result is None:
            result = self.run(cell, self.seed, self.trials)
            self.cache[cell.name] = result
            self.history.append((cell.name, result.failure_rate))
            if self.on_example is not None:
                self.on_example(cell, result)
        if cell.name in self.blocked:
            return False
        return bool(result.scored) and result.failure_rate >= self.min_failure_rate - 1e-9


def _settings(budget: int) -> settings:
    return settings(
        max_examples=budget,
        database=None,
        deadline=None,
        derandomize=False,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )


def _find_and_confirm(
    s: _Searcher,
    strategy: st.SearchStrategy[list[PerturbationSpec]],
    *,
    budget: int,
    rounds: int,
    confirm: int,
    confirm_rate: float,
    plugins: Sequence[str],
) -> tuple[Cell, Evaluation, int, list[tuple[str, float]]]:
    """Search, shrink and confirm, up to ``rounds`` times: the find, its confirmation, the
    confirmation seed and the finds that did not hold up."""
    # Fresh trial seeds: the confirmation must not re-use the trials the search selected on.
    confirm_seed = derive_seed(s.seed, "confirm")
    rejected: list[tuple[str, float]] = []
    for attempt in range(max(1, rounds)):
        rng = random.Random(derive_seed(s.seed, "search", s.scenario.id, s.agent_name, attempt))
        try:
            schedule = find(strategy, s.breaks, settings=_settings(budget), random=rng)
        except NoSuchExample:
            if rejected:
                break  # report the best unconfirmed find below
            raise ChaosevalError(
                f"no schedule within {budget} examples made {s.agent_name!r} fail "
                f"{s.scenario.id!r} in {s.min_failure_rate:.0%} of {s.trials} trials "
                f"(plugins searched: {', '.join(sorted(plugins))})"
            ) from None
        cell = make_cell(schedule)
        confirmation = s.run(cell, confirm_seed, confirm)
        if confirmation.failure_rate >= confirm_rate - 1e-9:
            return cell, confirmation, confirm_seed, rejected
        # A lucky find on a few trials: rule it out and search again.
        rejected.append((cell.name, confirmation.failure_rate))
        s.blocked.add(cell.name)
    # Every round's find fell short on confirmation: report the strongest of them.
    best = max(rejected, key=lambda x: x[1])[0]
    cell = next(c.cell for c in s.cache.values() if c.cell.name == best)
    return cell, s.run(cell, confirm_seed, confirm), confirm_seed, rejected


def search(
    scenario: Scenario,
    agent: AgentAdapter,
    *,
    agent_name: str,
    model: ModelSettings | None = None,
    seed: int = 0,
    trials: int = 3,
    budget: int = 200,
    min_failure_rate: float = 1.0,
    confirm: int = 20,
    confirm_rate: float = 0.8,
    rounds: int = 3,
    max_faults: int = 3,
    plugins: Sequence[str] | None = None,
    channels: Sequence[str] = ("tool", "observation", "model", "memory", "clock"),
    tools: Sequence[str] | None = None,
    on_example: Callable[[Cell, Evaluation], None] | None = None,
) -> SearchResult:
    """Find, shrink and confirm a schedule under which ``agent`` fails ``scenario``.

    A schedule breaks the agent when at least ``min_failure_rate`` of its ``trials`` trials
    fail with a fault delivered. The shrunk schedule is re-run on ``confirm`` fresh trials; if
    fewer than ``confirm_rate`` of them fail from a fault it was a lucky find, and the search
    runs again without it (up to ``rounds`` times; then the best find is returned with
    ``confirmed`` false). Raises ChaosevalError when no schedule breaks the agent at all.
    """
    if trials < 1 or confirm < 1 or budget < 1:
        raise ConfigError("--trials, --confirm and --budget must be at least 1")
    if not 0 < min_failure_rate <= 1:
        raise ConfigError("--min-failure-rate must be in (0, 1]")
    found = searchable_plugins(scenario, plugins, channels)
    targets = target_tools(scenario, tools)
    max_call = max(2, scenario.budgets.max_steps)
    wall = 30.0 if agent_clock(agent) == "virtual" else scenario.budgets.trial_timeout
    s = _Searcher(
        scenario,
        agent,
        agent_name,
        model or ModelSettings(),
        seed,
        trials,
        wall,
        min_failure_rate,
        on_example,
    )
    clean = s.run(Cell(name=CLEAN), seed, max(trials, 10))
    clean_fail = sum(r.status == "failed" for r in clean.scored) / max(1, len(clean.scored))
    cell, confirmation, confirm_seed, rejected = _find_and_confirm(
        s,
        schedule_strategy(found, targets, max_call, max_faults, scenario),
        budget=budget,
        rounds=rounds,
        confirm=confirm,
        confirm_rate=confirm_rate,
        plugins=list(found),
    )
    return SearchResult(
        scenario=scenario.id,
        agent=agent_name,
        seed=seed,
        cell=cell,
        search_trials=trials,
        examples=len(s.cache),
        confirm_seed=confirm_seed,
        confirmation=confirmation,
        clean_failure_rate=clean_fail,
        confirm_rate=confirm_rate,
        rejected=rejected,
        history=s.history,
    )
