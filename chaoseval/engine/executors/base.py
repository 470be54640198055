"""The executor seam: what an executor is given and what it hands back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from chaoseval.channels.limits import DEFAULT_REQUEST_LIMIT
from chaoseval.engine.trial import TrialPlan
from chaoseval.errors import ChaosevalError
from chaoseval.model.clock import ClockMode
from chaoseval.model.records import ModelSettings, TrialRecord
from chaoseval.seams.agent import AgentAdapter
from chaoseval.store.artifacts import ArtifactStore
from chaoseval.store.journal import encode_record
from chaoseval.users.llm import UserModel


class AgentCrashed(ChaosevalError):
    """The agent took its worker process down: it exited (``os._exit``), died of a signal (a
    segfault in native code) or went past ``--max-memory``. Judged as the agent's crash."""


@dataclass(frozen=True)
class TrialJob:
    """What every trial of a run shares."""

    agent: AgentAdapter
    agent_name: str
    model: ModelSettings
    clock_mode: ClockMode
    run_id: str
    run_seed: int
    wall_timeout: float
    concurrency: int
    trial_timeout: float | None = None  # --trial-timeout: replaces the scenarios' (real clock)
    store: ArtifactStore | None = None
    max_memory: int | None = None  # bytes of RSS per worker process (process executor)
    request_limit: int = DEFAULT_REQUEST_LIMIT  # bytes of one request body to a trial's server
    user_model: UserModel | None = None  # --user-model-endpoint: an LLM plays the user


@dataclass
class Finished:
    """One finished trial as the runner receives it."""

    trial_id: str
    status: str
    cost: float
    tokens: int
    line: str  # the journal line, redacted and capped
    parsed: TrialRecord | None = None  # the record, when it ran in this process
    # Why the harness could not finish the trial (a full disk, chaoseval.errors.HarnessStop):
    # nothing is recorded for it, the run stops and --resume runs it again.
    stop: str | None = None

    @classmethod
    def of(cls, record: TrialRecord) -> Finished:
        # (encode_record is imported at module level: an import statement here cost ~2% of a
        # trivial trial.)
        return cls(
            trial_id=record.trial_id,
            status=record.status,
            cost=record.usage.cost,
            tokens=record.usage.input_tokens + record.usage.output_tokens,
            line=encode_record(record),
            parsed=record,
        )

    @classmethod
    def stopped(cls, trial_id: str, why: str) -> Finished:
        """A trial the harness could not finish: no record, only why."""
        return cls(trial_id=trial_id, status="stopped", cost=0.0, tokens=0, line="", stop=why)

    def record(self) -> TrialRecord:
        """The TrialRecord, parsed from the line when it came from another process."""
        if self.parsed is None:
            self.parsed = TrialRecord.model_validate_json(self.line)
        return self.parsed


class Sink(Protocol):
    """The runner's side: the budget gate and where finished trials go."""

    def may_start(self) -> bool:
        """False once a run budget is reached: no new trial starts (the runner counts it)."""
        ...

    def done(self, finished: Finished) -> None: ...


class Executor(Protocol):
    name: str

    async def run(self, plans: Sequence[TrialPlan], job: TrialJob, sink: Sink) -> None:
        """Run every plan (or skip it when ``sink.may_start()`` says no); return when each
        has been handed to ``sink.done`` or skipped."""
        ...
