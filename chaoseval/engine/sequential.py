"""``run --sequential``: the matrix in rounds, each cell stopped once it is decided.

A round is a smaller matrix run through the same executor (inprocess, process or Ray) into the
same journal: every trial below the round's count per task, in clean and in the cells still
undecided, not yet recorded. Trial i of a task has the same seed in every cell and in every
round's matrix (chaoseval.model.seeding), so each round stays paired with clean and the same
seed writes the same trials. After a round the decisions are replayed from the journal alone
(chaoseval.analysis.sequential.replay): what the runner decides, report, gate and a resumed run
decide the same way. After the first round a cell runs only the tasks its faults reached in it,
and clean only the tasks of the cells still running.

A budget (--budget-trials, --budget-cost, --budget-tokens) ends the sequence where it is spent:
the cells then undecided are inconclusive, with the trials per task each would still need, and
the same command with ``--resume`` and a larger budget carries on from the recorded trials.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass, replace
from pathlib import Path

from chaoseval.analysis.sequential import Outcomes, Progress, replay, stop_early
from chaoseval.engine.executors import Executor, Finished, TrialJob, make_executor
from chaoseval.engine.loops import run_loop
from chaoseval.engine.matrix import Plans
from chaoseval.engine.runner import (
    RunConfig,
    RunResult,
    _Collector,
    _job,
    _start,
    plan,
    spent_budget,
    watched,
)
from chaoseval.errors import ConfigError
from chaoseval.model.records import CLEAN, RunManifest, TrialRecord
from chaoseval.store.artifacts import ArtifactStore
from chaoseval.store.columns import read_trials
from chaoseval.store.journal import JournalWriter, encode_manifest
from chaoseval.store.lock import JournalLock

__all__ = ["SequentialResult", "run", "run_sequential"]


@dataclass
class SequentialResult(RunResult):
    progress: Progress | None = None  # the decisions when the run ended


class _RoundCollector(_Collector):
    """The runner's sink, also keeping the ids of the trials this run wrote: a round never
    runs one again (a not-evaluable one included; --resume runs those again)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.written: set[str] = set()

    def done(self, finished: Finished) -> None:
        before = self.count
        super().done(finished)
        if self.count > before:
            self.written.add(finished.trial_id)


class _Done(Container[str]):
    def __init__(self, *parts: Container[str]) -> None:
        self.parts = parts

    def __contains__(self, item: object) -> bool:
        return any(item in p for p in self.parts)


def _wanted(progress: Progress, first: int) -> Callable[[str, str, int], bool]:
    """The next round's trials: below its count, in its cells (their reached tasks once the
    first round fixed them) and in clean on those tasks."""
    n = progress.next_trials or 0
    cells = {c: set(progress.decisions[c].tasks) for c in progress.next_cells}
    fixed = n > first and all(cells.values())
    clean_tasks = set().union(*cells.values()) if fixed else None
    if fixed and progress.allocated is not None:
        return _allocated(progress.allocated, n)

    def wanted(cell: str, task: str, index: int) -> bool:
        if index >= n:
            return False
        if cell == CLEAN:
            return clean_tasks is None or task in clean_tasks
        if cell not in cells:
            return False
        return not fixed or task in cells[cell]

    return wanted


def _allocated(plan: dict[str, dict[str, set[int]]], n: int) -> Callable[[str, str, int], bool]:
    """With allocation: the trials each cell's plan runs, and clean's of the same tasks and
    indices (the union over the cells: a trial clean ran for one cell pairs another's too)."""
    clean: dict[str, set[int]] = {}
    for tasks in plan.values():
        for task, indices in tasks.items():
            clean.setdefault(task, set()).update(indices)

    def wanted(cell: str, task: str, index: int) -> bool:
        if index >= n:
            return False
        runs = clean if cell == CLEAN else plan.get(cell, {})
        return index in runs.get(task, ())

    return wanted


def _replayed(config: RunConfig, manifest: RunManifest) -> tuple[Progress, Outcomes]:
    assert config.journal is not None and manifest.sequential is not None
    t = read_trials(Path(config.journal))
    outcomes = Outcomes.of_trials(t, [s.id for s in config.scenarios])
    cells = [c.name for c in manifest.cells]
    return replay(outcomes, manifest.sequential, cells), outcomes


def _record(writer: JournalWriter, manifest: RunManifest, progress: Progress) -> None:
    """A manifest line of the same run with each cell's decision so far: what stopped it."""
    assert manifest.sequential is not None
    decided = {c: d.to_json() for c, d in progress.decisions.items()}
    again = manifest.model_copy(
        update={"sequential": manifest.sequential.model_copy(update={"decided": decided})}
    )
    writer.write_line(encode_manifest(again))


async def run_sequential(
    config: RunConfig, on_record: Callable[[TrialRecord], None] | None = None
) -> SequentialResult:
    """Run the matrix in rounds until every cell is decided, its cap reached or the budget
    spent; the journal's one writer meanwhile."""
    design = config.sequential
    if design is None:
        raise ConfigError("run_sequential needs a RunConfig with a sequential design")
    journal = config.journal
    if journal is None:
        raise ConfigError("--sequential decides from its journal: give it one (--journal)")
    config = replace(config, trials=design.max_trials)
    plans = plan(config)
    executor = make_executor(config.executor)
    with JournalLock(Path(journal)):
        return await _rounds(config, plans, executor, on_record)


async def _rounds(
    config: RunConfig,
    plans: Plans,
    executor: Executor,
    on_record: Callable[[TrialRecord], None] | None,
) -> SequentialResult:
    assert config.journal is not None and config.sequential is not None
    store = ArtifactStore.for_journal(Path(config.journal))
    manifest, done, writer = await _start(config, store)
    assert writer is not None
    sink = _RoundCollector(config, spent_budget(config, done), writer, on_record)
    job = _job(config, manifest, store)
    # The most the rounds may run: most cells stop long before their cap.
    label, total = f"{config.agent_name} (sequential: at most)", len(plans.without(done))
    with watched(config, sink, label, total):
        state = await _loop(config, manifest, plans, executor, job, sink, _Done(done))
    budget = sink.budget
    return SequentialResult(
        manifest, [], config.journal, resumed=len(done), budget=budget, written=sink.count,
        progress=state,
    )  # fmt: skip


async def _loop(
    config: RunConfig,
    manifest: RunManifest,
    plans: Plans,
    executor: Executor,
    job: TrialJob,
    sink: _RoundCollector,
    done: Container[str],
) -> Progress:
    assert config.sequential is not None and sink.writer is not None
    seen = _Done(done, sink.written)
    while True:
        state, outcomes = _replayed(config, manifest)
        why = None if state.next_trials is None else sink.budget.reached
        if state.next_trials is None or why is not None:
            if why is not None:
                stop_early(state, outcomes, f"the budget ran out: {why}")
            _record(sink.writer, manifest, state)
            return state
        todo = plans.select(_wanted(state, config.sequential.first), seen)
        before = sink.count
        await executor.run(todo, job, sink)
        if sink.stopped is not None:
            return state
        if sink.count == before and not sink.budget.reached:
            # Nothing recorded and no budget stop (an executor that ran nothing): replaying
            # would plan the same round again.
            stop_early(state, outcomes, "a round recorded no trial")
            _record(sink.writer, manifest, state)
            return state


def run(
    config: RunConfig, on_record: Callable[[TrialRecord], None] | None = None
) -> SequentialResult:
    return run_loop(run_sequential, config, on_record)
