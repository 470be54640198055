"""The matrix runner: scenarios x (clean + cells) x n trials, bounded concurrency, a journal."""

from __future__ import annotations

import json
import platform
import sys
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Protocol

from chaoseval import redact
from chaoseval.channels.limits import DEFAULT_REQUEST_LIMIT
from chaoseval.engine.budget import Budget
from chaoseval.engine.executors import Executor, Finished, TrialJob, make_executor
from chaoseval.engine.judge import possible_root_causes
from chaoseval.engine.loops import run_loop
from chaoseval.engine.matrix import Plans
from chaoseval.engine.references import reference_runs
from chaoseval.engine.trial import instantiate
from chaoseval.errors import ConfigError, HarnessStop, IsolationWarning
from chaoseval.model.clock import ClockMode
from chaoseval.model.records import (
    CLEAN,
    Cell,
    Isolation,
    ModelSettings,
    RunManifest,
    SequentialDesign,
    TrialRecord,
    check_sandbox_mode,
)
from chaoseval.model.scenario import Scenario
from chaoseval.seams.agent import AgentAdapter
from chaoseval.seams.perturbation import registry as perturbations
from chaoseval.seams.rootcause import USER_SIMULATOR
from chaoseval.store.artifacts import ArtifactStore
from chaoseval.store.columns import Trials, read_trials
from chaoseval.store.journal import JournalWriter
from chaoseval.store.kept import KeptTrials
from chaoseval.store.lock import JournalLock
from chaoseval.users.llm import UserModel

CLEAN_CELL = Cell(name=CLEAN)
# Characters of a cell's name: it is a report's column and part of every trial id, written
# whole in each trial line (a string over redact.TEXT_LIMIT would be cut there, and the ids
# no longer the manifest's). Far above any name one reads, far below that cut.
CELL_NAME_LIMIT = 4096
PACKAGES = ("anyio", "pydantic", "numpy", "hypothesis", "faker", "freezegun", "tenacity", "respx")


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def agent_clock(agent: AgentAdapter) -> ClockMode:
    """The clock an agent's trials run on: virtual only when the adapter declares
    ``clock = "virtual"`` (it never waits on wall time), real otherwise."""
    return "virtual" if getattr(agent, "clock", "real") == "virtual" else "real"


class RunProgress(Protocol):
    """Where the runner reports progress; it draws nothing itself (render/ does)."""

    def start(self, label: str, total: int) -> None: ...

    def trial_done(self, record: TrialRecord) -> None: ...

    def stop(self, ended: str = "finished") -> None:
        """The run ended: "finished", "interrupted" (Ctrl-C), "stopped" (a budget or a harness
        stop) or "stopped by an error"."""


@dataclass
class RunConfig:
    scenarios: Sequence[Scenario]
    agent: AgentAdapter
    agent_name: str
    cells: Sequence[Cell] = ()
    trials: int = 5
    seed: int = 0
    model: ModelSettings = field(default_factory=ModelSettings)
    ks: Sequence[int] = (1, 2, 5)
    primary: str = "pass^1"  # the metric verdicts are judged by (chaoseval.analysis.primary)
    concurrency: int = 4
    journal: Path | None = None
    resume: bool = False
    overwrite: bool = False
    wall_timeout: float | None = None
    budget_cost: float | None = None  # run totals (--budget-cost / --budget-tokens)
    budget_tokens: int | None = None
    budget_trials: int | None = None  # recorded trials, the run's total (--budget-trials)
    # run --sequential: rounds of trials, each cell stopped once decided
    # (chaoseval.engine.sequential); ``trials`` is then its cap per task.
    sequential: SequentialDesign | None = None
    progress: RunProgress | None = None  # e.g. chaoseval.render.progress.TerminalProgress
    # Run each scenario's reference solution once and record it in the manifest (the report's
    # tool-call correctness and path efficiency read it from there).
    references: bool = True
    # Where trials run: "inprocess" (None), "process", "ray" or an Executor object (one with
    # options: RayExecutor(address=...)); `chaoseval run` picks by the agent's clock
    # (chaoseval.engine.executors.default_executor).
    executor: str | Executor | None = None
    max_memory: int | None = None  # bytes of RSS per worker process (process executor)
    # Bytes of one request body a trial's servers accept (model channel, MCP, HTTP tools,
    # pages): over it, a 413 and the agent's oversized request in its trajectory.
    request_limit: int = DEFAULT_REQUEST_LIMIT
    # An LLM plays the conversational scenarios' users (--user-model-endpoint); None: the
    # deterministic user, no model and no network.
    user_model: UserModel | None = None
    # RunResult.records holds every record; a CLI run keeps none in memory (the journal has
    # them), so its memory stays flat however many trials run.
    keep_records: bool = True
    # How exec: agents are isolated from each other and the host (chaoseval.agents.sandbox):
    # "auto" (bubblewrap where it works, else a warning), "bwrap" (or refuse) or "none".
    sandbox: str = "auto"
    # Recorded in the manifest only: where the scenarios were loaded from (None: the installed
    # packs), and the gate rules the caller judges the run by.
    scenario_paths: Sequence[Path] | None = None
    gate: Sequence[str] = ()

    @property
    def clock_mode(self) -> ClockMode:
        return agent_clock(self.agent)

    def all_cells(self) -> list[Cell]:
        cells = [CLEAN_CELL, *[c for c in self.cells if not c.is_clean]]
        names = [c.name for c in cells]
        if len(set(names)) != len(names):
            raise ConfigError(f"two matrix cells share a name: {names}")
        return cells


@dataclass
class RunResult:
    manifest: RunManifest
    records: list[TrialRecord]
    journal: Path | None
    resumed: int = 0
    budget: Budget | None = None
    written: int = 0  # trials this run recorded (kept or not)


def build_manifest(config: RunConfig, run_id: str) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        chaoseval_version=_version("chaoseval"),
        python=f"{platform.python_implementation()} {sys.version.split()[0]}",
        packages={p: _version(p) for p in PACKAGES},
        agent=config.agent_name,
        model=config.model,
        seed=config.seed,
        trials=config.trials,
        ks=list(config.ks),
        primary=config.primary,
        clock=config.clock_mode,
        scenarios=[s.info() for s in config.scenarios],
        cells=config.all_cells(),
        concurrency=config.concurrency,
        created_at=datetime.now(UTC),
        root_causes=possible_root_causes(
            [perturbations.get(p.name) for c in config.all_cells() for p in c.perturbations]
        )
        + ([USER_SIMULATOR] if config.user_model is not None else []),
        user_model=config.user_model.describe() if config.user_model is not None else None,
        request_limit=(
            None if config.request_limit == DEFAULT_REQUEST_LIMIT else config.request_limit
        ),
        scenario_paths=(
            [str(p.resolve()) for p in config.scenario_paths] if config.scenario_paths else None
        ),
        gate=list(config.gate) or None,
        sequential=config.sequential,
    )


def plan(config: RunConfig) -> Plans:
    """Every trial of the matrix, made on demand (a million trials are no million objects)."""
    if config.trials < 1:
        raise ConfigError(f"--trials must be at least 1 (got {config.trials})")
    if not config.scenarios:
        raise ConfigError("no scenarios selected")
    check_sandbox_mode(config.sandbox)  # said for any agent, not only one that sandboxes
    for cell in config.all_cells():
        if len(cell.name) > CELL_NAME_LIMIT:
            raise ConfigError(
                f"a cell name of {len(cell.name)} characters ({cell.name[:60]!r}...): a cell "
                f'name has at most {CELL_NAME_LIMIT}; give the cell a shorter "name" in its '
                "spec file"
            )
        instantiate(cell)  # unknown plugins and bad parameters stop the run before it starts
    return Plans(config.all_cells(), config.scenarios, config.trials)


# The flag or setting that sets each part of RunManifest.config_key, as a user would change it.
_CONFIG_FLAGS = {
    "agent": "--agent",
    "model": "the model (--model, --temperature, --model-seed)",
    "seed": "--seed",
    "scenarios": "the scenarios (-s)",
    "cells": "the cells (-p)",
    "request_limit": "--max-request-size",
    "user_model": "the LLM user (--user-model-endpoint, --user-model)",
    "sequential": "the sequential design (--alpha, --margin, -n, --round-size, "
    "--max-trials-per-task, --allocate)",
}


def config_differences(was: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between two :meth:`RunManifest.config_key` values, each as
    ``FLAG: journal X, this run Y`` (lists as what one has that the other has not)."""
    out = []
    for key, flag in _CONFIG_FLAGS.items():
        a, b = was.get(key), now.get(key)
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list):
            only_was = ", ".join(_brief(x) for x in a if x not in b) or "nothing else"
            only_now = ", ".join(_brief(x) for x in b if x not in a) or "nothing else"
            out.append(f"{flag}: only the journal has {only_was}; only this run has {only_now}")
        else:
            out.append(f"{flag}: the journal has {_brief(a)}, this run {_brief(b)}")
    return out


def _brief(value: Any, limit: int = 120) -> str:
    """A config value as a user would recognise it: its text, else its JSON."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _resumed(config: RunConfig, manifest: RunManifest) -> Trials | None:
    """The journal this run continues (``--resume`` on a non-empty journal), else None.

    Refuses to replace an existing journal without ``--overwrite`` and to continue one that a
    different configuration wrote."""
    if config.journal is None:
        return None
    path = Path(config.journal)
    if not (path.exists() and path.stat().st_size):
        return None
    if not (config.resume or config.overwrite):
        raise ConfigError(
            f"{path} already exists; pass --resume to continue it or --overwrite to replace it"
        )
    if not config.resume:
        return None
    old = read_trials(path)  # columns, line by line: never the whole journal's records
    # Compared as written: the journal's manifest has its secrets redacted and long strings cut.
    was_key = redact.clean_data(old.full_manifest().config_key())
    now_key = redact.clean_data(manifest.config_key())
    if was_key != now_key:
        raise ConfigError(
            f"{path} was written by a different run configuration: "
            + "; ".join(config_differences(was_key, now_key))
            + "; resume with the journal's settings, or use another --journal or --overwrite"
        )
    was, now = old.manifest.isolation, manifest.isolation
    if was is not None and now is not None and was.sandbox != now.sandbox:
        # Its manifest (and so every report) would say the trials were sandboxed, or were
        # not, for trials that this invocation runs the other way.
        raise ConfigError(
            f"{path} ran its exec: agent with sandbox {was.sandbox!r}; this resume would run "
            f"it with {now.sandbox!r}{f' ({now.note})' if now.note else ''}: resume with "
            f"--sandbox {'bwrap' if was.sandbox == 'bwrap' else 'none'}, or use another --journal"
        )
    return old


def _isolate(config: RunConfig) -> Isolation | None:
    """Put the agent's processes in their sandbox, once for the run, before any worker starts
    (the workers get the agent as it is then); None for an agent that starts no process.
    A run whose trials are not isolated says so once, here (IsolationWarning)."""
    isolate = getattr(config.agent, "isolate", None)
    if not callable(isolate):
        return None
    isolation: Isolation = isolate(config.sandbox)
    warning = isolation.warning()
    if warning is not None:
        warnings.warn(warning, IsolationWarning, stacklevel=3)
    return isolation


async def _start(
    config: RunConfig, store: ArtifactStore | None
) -> tuple[RunManifest, KeptTrials, JournalWriter | None]:
    """The run's manifest, the trials a resumed journal already holds, and the journal writer.

    A new manifest records the scenarios' reference runs; a resumed one keeps its own (and its
    trials' artifacts)."""
    manifest = build_manifest(config, uuid.uuid4().hex[:12])
    manifest.isolation = _isolate(config)
    old = _resumed(config, manifest)
    if old is not None:
        manifest = old.full_manifest()
        # old.manifest.trials: the journal's count, a later manifest line's when one grew it.
        grown = config.trials > old.manifest.trials
        manifest.trials = max(old.manifest.trials, config.trials)
        kept = KeptTrials(old)
        if store is not None:
            store.keep_only(kept)
        # More trials than the journal allows: its manifest again with the new count, before
        # them (readers refuse an index past the count: store.conform).
        again = manifest if grown else None
        return manifest, kept, JournalWriter(old.path, None, truncate_cut_off=True, again=again)
    if config.references:
        manifest.references = await reference_runs(config.scenarios, config.seed)
    if config.journal is None:
        return manifest, KeptTrials(), None
    # The journal is replaced at once, by one holding its manifest (never an empty file).
    writer = JournalWriter(Path(config.journal), manifest, truncate_cut_off=False)
    if store is not None:
        store.clear()  # a replaced journal takes its trials' artifacts with it
    return manifest, KeptTrials(), writer


def _wall_timeout(config: RunConfig) -> float:
    if config.wall_timeout:
        return config.wall_timeout
    if config.clock_mode == "virtual":
        return 30.0
    return max(s.budgets.trial_timeout for s in config.scenarios) + 5


class _Collector:
    """The runner's side of the executor (its Sink): the budget gate, the journal (the only
    writer), progress, and the records kept in memory only when asked for."""

    def __init__(
        self,
        config: RunConfig,
        budget: Budget,
        writer: JournalWriter | None,
        on_record: Callable[[TrialRecord], None] | None,
    ):
        self.budget, self.writer, self.on_record = budget, writer, on_record
        self.progress = config.progress
        self.records: list[TrialRecord] | None = [] if config.keep_records else None
        self.count = 0
        self.stopped: HarnessStop | None = None  # the harness could not go on: no new trial

    def may_start(self) -> bool:
        if self.stopped is not None:
            return False
        if self.budget.reached:  # no new trial starts; those in flight finish
            self.budget.skipped += 1
            return False
        return True

    def done(self, finished: Finished) -> None:
        if self.stopped is not None:
            return  # nothing is written past a stop: --resume runs the trials in flight again
        try:
            if finished.stop is not None:
                raise HarnessStop(finished.stop)
            if self.writer is not None:
                self.writer.write_line(finished.line)
        except HarnessStop as exc:  # the trial is not recorded: no outcome is the agent's
            self.stopped = exc
            return
        self.count += 1
        self.budget.spend(finished.cost, finished.tokens)
        if self.records is None and self.on_record is None and self.progress is None:
            return  # nothing needs the record object: a million trials stay a million lines
        record = finished.record()
        if self.records is not None:
            self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)
        if self.progress is not None:
            self.progress.trial_done(record)


def _job(config: RunConfig, manifest: RunManifest, store: ArtifactStore | None) -> TrialJob:
    return TrialJob(
        agent=config.agent,
        agent_name=config.agent_name,
        model=config.model,  # the manifest's has its secrets redacted
        clock_mode=config.clock_mode,
        run_id=manifest.run_id,
        run_seed=config.seed,
        wall_timeout=_wall_timeout(config),
        trial_timeout=config.wall_timeout,  # --trial-timeout: longer or shorter
        concurrency=max(1, config.concurrency),
        store=store,
        max_memory=config.max_memory,
        request_limit=config.request_limit,
        user_model=config.user_model,
    )


async def run_matrix(
    config: RunConfig, on_record: Callable[[TrialRecord], None] | None = None
) -> RunResult:
    """Run the matrix; its journal's one writer (chaoseval.store.lock) while it runs."""
    plans = plan(config)
    executor = make_executor(config.executor)
    if config.journal is None:
        return await _run_plans(config, plans, executor, on_record)
    # Taken before anything reads, moves aside, truncates or replaces the journal.
    with JournalLock(Path(config.journal)):
        return await _run_plans(config, plans, executor, on_record)


async def _run_plans(
    config: RunConfig,
    plans: Plans,
    executor: Executor,
    on_record: Callable[[TrialRecord], None] | None,
) -> RunResult:
    store = None if config.journal is None else ArtifactStore.for_journal(Path(config.journal))
    manifest, done, writer = await _start(config, store)

    todo = plans.without(done)
    sink = _Collector(config, spent_budget(config, done), writer, on_record)
    with watched(config, sink, config.agent_name, len(todo)):
        await executor.run(todo, _job(config, manifest, store), sink)
    budget = sink.budget
    records: list[TrialRecord] = []
    if sink.records is not None:
        order = {p.trial_id: i for i, p in enumerate(plans)}
        records = sorted([*done.values(), *sink.records], key=lambda r: order[r.trial_id])
    return RunResult(
        manifest, records, config.journal, resumed=len(done), budget=budget, written=sink.count
    )


def spent_budget(config: RunConfig, done: KeptTrials) -> Budget:
    """The run's budget, what the resumed trials spent counted (budgets are run totals)."""
    budget = Budget(config.budget_cost, config.budget_tokens, config.budget_trials)
    for cost, tokens in done.spent():
        budget.spend(cost, tokens)
    return budget


@contextmanager
def watched(config: RunConfig, sink: _Collector, label: str, total: int) -> Iterator[None]:
    """Trials running: progress started, and on the way out (however it ends) stopped with
    how it ended and the journal closed; a harness stop raised after both."""
    progress = config.progress
    ended = "interrupted"  # unless the run gets to say otherwise: Ctrl-C, a cancel
    try:
        if progress is not None:
            progress.start(label, total)
        yield
        ended = "finished" if sink.stopped is None else "stopped"
    except Exception:
        ended = "stopped by an error"
        raise
    finally:
        if progress is not None:
            progress.stop(ended)
        if sink.writer is not None:
            _close(sink.writer, sink.stopped)
    if sink.stopped is not None:
        raise sink.stopped


def _close(writer: JournalWriter, stopped: HarnessStop | None) -> None:
    """Close the journal; once the run stopped on a full disk, its sync may fail too, and the
    stop is what is said."""
    try:
        writer.close()
    except HarnessStop:
        if stopped is None:
            raise


def run(config: RunConfig, on_record: Callable[[TrialRecord], None] | None = None) -> RunResult:
    return run_loop(run_matrix, config, on_record)
