"""The journal's record schema. Bump SCHEMA_VERSION on any incompatible change."""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from chaoseval.errors import ConfigError
from chaoseval.model import untrusted
from chaoseval.model.trajectory import Trajectory, built

# 2: the manifest lists the run's root causes (name, label, owner); 1 still reads.
# 3: the manifest records each scenario's reference run (``references``); 1 and 2 still read.
# 4: a trial records the degradation contracts it was judged against (``contracts``, written
#    only when one applied); 1 to 3 still read.
# 5: the manifest records the run's primary metric (``primary``, e.g. "pass^1"), the one its
#    verdicts are judged by; 1 to 4 still read (as pass^1).
# 6: a trial under adversarial content records ``injection_followed`` (the planted
#    instruction's goal was reached) and ``utility`` (the user's task was still done), both only
#    where such content reached the agent; 1 to 5 still read (utility derived from the checks).
# 7: a model step's ``request_hash`` is sha256 of the request's bytes as the agent sent them
#    (channels.model.wire.fingerprint), not of a canonical text of their parse; 1 to 6 still
#    read (replay then leaves the field out of its comparison: investigate.replay).
# 8: a conversational scenario's trajectory holds ``user`` steps (the agent's message in
#    ``args["text"]``, the user's reply in ``result``, ``UserTurnData``) and faults on the
#    ``user`` channel; 1 to 7 still read.
SCHEMA_VERSION = 8
CLEAN = "clean"  # the name of the clean cell: the matrix column with no perturbation

Status = Literal["passed", "failed", "not_evaluable"]


class ModelSettings(BaseModel):
    model: str = "sim-1"
    temperature: float = Field(default=0.7, ge=0)
    seed: int | None = None
    max_tokens: int | None = None


class PerturbationSpec(BaseModel):
    """One plugin with its parameters; a cell is a stack of these."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)

    def label(self) -> str:
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.name}({inner})"


class Cell(BaseModel):
    """A column of the matrix: clean (no perturbation, named CLEAN) or a stack of
    perturbations."""

    name: str
    perturbations: list[PerturbationSpec] = Field(default_factory=list)

    @property
    def is_clean(self) -> bool:
        return not self.perturbations


class Budgets(BaseModel):
    """A scenario's limits; recorded in the manifest beside the scenario's id."""

    # Upper bounds: a hostile or mistyped file (inf, 1e308, 1e30 steps) must not make a
    # trial that can never end.
    max_steps: int = Field(default=20, ge=1, le=10_000)
    call_timeout: float = Field(default=5.0, gt=0, le=3_600)  # seconds per tool call
    trial_timeout: float = Field(default=120.0, gt=0, le=86_400)  # seconds per trial


class ScenarioInfo(BaseModel):
    """What a run's manifest says about one scenario (``Scenario.info()`` builds it).

    Importers and older journals know only some fields: the ones a record was given are the
    ones written back, so a journal reads and re-writes unchanged."""

    id: str
    domain: str = ""
    tags: list[str] = Field(default_factory=list)
    source: str | None = None
    # sha256 of the source file's bytes when the run loaded it, so replay and sample can say
    # the file changed since (absent in older journals, imports, and sources that are no file).
    sha256: str | None = None
    tools: dict[str, str] = Field(default_factory=dict)  # tool name -> version
    budgets: Budgets | None = None
    # The scenario's named veto rules (name -> safety | hallucination): what a gate rule's
    # ``vetoes(NAME)`` may name, also when none fired.
    vetoes: dict[str, str] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _given_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}


class CheckResult(BaseModel):
    """One verifier check's outcome in a trial."""

    name: str
    passed: bool
    detail: str = ""


class ContractResult(BaseModel):
    """A degradation contract a trial was judged against, because a fault it names reached
    the agent: whether the degraded outcome it declares correct held, and its checks (none
    when the agent returned no output)."""

    name: str
    held: bool
    checks: list[CheckResult] = Field(default_factory=list)


class Usage(BaseModel):
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    @classmethod
    def empty(cls) -> Usage:
        """``Usage()``, as every trial starts one (without validating its four defaults)."""
        values = {"model_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost": 0.0}
        return built(cls, values, set())


class AgentOutput(BaseModel):
    """What the agent hands back: its answer, any structured data, and what it spent."""

    answer: str = ""
    data: dict[str, Any] = Field(default_factory=dict)
    gave_up: bool = False  # the agent stopped and said it could not finish (graceful degradation)
    usage: Usage = Field(default_factory=Usage)

    @classmethod
    def from_json(cls, text: str) -> AgentOutput | None:
        """The output an agent wrote as ``{"answer": ..., "gave_up": ..., "data": {...}}``, or
        None when ``text`` is not such an object (wire and process agents then keep the text)."""
        try:
            parsed = untrusted.loads(text)
        except ValueError:  # not JSON, or JSON too deep to read (untrusted.TooDeep)
            return None
        return cls.from_object(cls.unwrapped(parsed))

    @staticmethod
    def unwrapped(parsed: Any) -> Any:
        """The answer object an agent meant: a framework agent prints the model's final text
        inside its own ``{"answer": ...}``, so where that text is itself an answer object
        (chaoseval-sim's, or a model told to answer in chaoseval's JSON) its ``gave_up`` and
        ``data`` would be lost. When ``parsed``'s ``answer`` is a string holding a JSON object
        with ``answer``, that object; else ``parsed``. Exactly one level: the inner object's
        own ``answer`` is kept as it is."""
        inner = parsed.get("answer") if isinstance(parsed, dict) else None
        if not (isinstance(inner, str) and inner.lstrip().startswith("{")):
            return parsed
        try:
            value = untrusted.loads(inner)
        except ValueError:  # not JSON, or too deep to read: the string is the answer
            return parsed
        return value if isinstance(value, dict) and "answer" in value else parsed

    @classmethod
    def from_object(cls, parsed: Any) -> AgentOutput | None:
        """:meth:`from_json` of the value already parsed (None: not an answer object)."""
        if not (isinstance(parsed, dict) and "answer" in parsed):
            return None
        data = parsed.get("data")
        return cls(
            answer=str(parsed["answer"]),
            gave_up=bool(parsed.get("gave_up")),
            data=data if isinstance(data, dict) else {},
        )


class RootCause(BaseModel):
    """One category a trial can be blamed on. An open set: the judge's generic causes belong to
    ``core``, a perturbation plugin declares its own (chaoseval.seams.rootcause registers both),
    and a run's manifest lists the ones it can produce so a report labels them without plugins."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")  # what TrialRecord.root_cause holds
    label: str = Field(min_length=1)  # for people: "trusted a stale memory"
    owner: str = "core"  # "core", or the name of the plugin that declares it


class Veto(BaseModel):
    kind: Literal["safety", "hallucination"]
    detail: str
    step: int | None = None
    # The scenario's veto rule that found it (``vetoes:`` in YAML, ``VetoRule`` in Python),
    # which gate rules name (``vetoes(over-refund) == 0``); absent for the policy's vetoes,
    # the facts' and the plugins', so their records read as before.
    name: str | None = Field(default=None, exclude_if=lambda v: v is None)


class Artifact(BaseModel):
    """A file a trial left in the journal's artifact store (chaoseval.store.artifacts)."""

    name: str  # stdout.txt, stderr.txt, ...
    path: str  # relative to the journal's folder
    size: int  # bytes in full, before any cut
    cut: bool = False  # only part of it was kept


class TrialRecord(BaseModel):
    type: Literal["trial"] = "trial"
    schema_version: int = SCHEMA_VERSION
    run_id: str
    trial_id: str  # make_trial_id's scenario/cell/index: stable across runs of the same matrix
    scenario: str
    scenario_tags: list[str] = Field(default_factory=list)
    cell: str
    perturbations: list[PerturbationSpec] = Field(default_factory=list)
    index: int
    seed: int  # the trial seed; every stream of the trial derives from it and the run seed
    world_seed: int
    agent: str
    model: ModelSettings
    tool_versions: dict[str, str] = Field(default_factory=dict)
    status: Status
    root_cause: str | None = None  # why it failed, or why it is not evaluable
    error: str | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    vetoes: list[Veto] = Field(default_factory=list)
    answer: str | None = None
    trajectory: Trajectory = Field(default_factory=Trajectory)
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    clock: Literal["virtual", "real"] = "virtual"
    sim_seconds: float = 0.0  # trial clock time (virtual or real)
    wall_seconds: float = 0.0
    started_at: datetime
    # Optional and additive: written only when a trial left artifacts, so the records of
    # in-process agents (and older readers) are unchanged.
    # (exclude_if, not a wrap serializer: that would build every record as Python data
    # before writing it, several times slower than pydantic-core's own JSON.)
    artifacts: list[Artifact] = Field(default_factory=list, exclude_if=lambda v: not v)
    # Likewise: the degradation contracts the trial was judged against (schema 4), only in
    # trials where a fault a scenario's contract names was delivered.
    contracts: list[ContractResult] = Field(default_factory=list, exclude_if=lambda v: not v)
    # Likewise: seconds the trial's wire channels (model channel, MCP, HTTP tools) spent on
    # their own, apart from the upstream's time and injected delays, so agent latency can be
    # told from chaoseval's. Absent for in-process agents.
    channel_overhead: float | None = Field(default=None, exclude_if=lambda v: v is None)
    # Schema 6, only in trials where adversarial content (an ``injection`` plugin's payload)
    # reached the agent: whether it followed the planted instruction (a safety veto that fails
    # the trial), and whether the user's task was done all the same (the scenario's checks
    # passed, or a degradation contract held). Elsewhere ``task_done`` derives utility.
    injection_followed: bool | None = Field(default=None, exclude_if=lambda v: v is None)
    utility: bool | None = Field(default=None, exclude_if=lambda v: v is None)

    @property
    def scored(self) -> bool:
        return self.status != "not_evaluable"

    @property
    def task_done(self) -> bool:
        """Utility: the user's task was done (checks passed or a contract held), vetoes aside."""
        if self.utility is not None:
            return self.utility
        return task_done(self.checks, [c.held for c in self.contracts])

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def faults_delivered(self) -> int:
        return sum(f.delivered for f in self.trajectory.faults)


def file_sha256(source: str | None) -> str | None:
    """sha256 of the bytes of the file ``source`` names; None when it names no readable file
    (an importer's label, a scenario built in code)."""
    if not source:
        return None
    try:
        return hashlib.sha256(Path(source).read_bytes()).hexdigest()
    except OSError:
        return None


def make_trial_id(scenario: str, cell: str, index: int) -> str:
    """``scenario/cell/index``: stable across runs of the same matrix (a record's
    ``trial_id``; a journal's columns keep only the ids that differ from it)."""
    return f"{scenario}/{cell}/{index}"


def task_done(checks: list[Any], held: list[bool]) -> bool:
    """Utility from a record's checks (anything with ``passed``) and its contracts' ``held``:
    every check ran and passed, or a degradation contract held. Vetoes are not asked."""
    return (bool(checks) and all(c.passed for c in checks)) or any(held)


class ToolCall(BaseModel):
    """One tool call: the tool's name and the arguments it was called with."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class ReferenceRun(BaseModel):
    """A scenario's reference solution, run once at ``run`` time, clean, on the run's world.

    Recorded in the manifest so that a report measures tool-call correctness and path
    efficiency from the journal alone, without re-loading scenarios or running anything.
    """

    steps: int  # tool calls the scenario declares its reference solution makes
    passed: bool  # a reference that does not pass is no yardstick: its calls are not used
    calls: list[ToolCall] = Field(default_factory=list)
    error: str | None = None  # why the reference could not run at all


SANDBOX_MODES = ("auto", "bwrap", "none")  # `run --sandbox` (chaoseval.agents.sandbox)


def check_sandbox_mode(mode: str) -> None:
    if mode not in SANDBOX_MODES:
        raise ConfigError(f"--sandbox {mode!r}: choose one of {', '.join(SANDBOX_MODES)}")


class Isolation(BaseModel):
    """How a run's ``exec:`` agents were kept apart (chaoseval.agents.sandbox): in a sandbox
    of their own ("bwrap"), or not at all ("none", with why)."""

    sandbox: Literal["bwrap", "none"]
    # With bwrap: the agent's network is its trial's servers alone ("trial"), or the host's
    # where bwrap cannot make a network namespace here ("host", the note says why).
    network: Literal["trial", "host"] | None = Field(default=None, exclude_if=lambda v: v is None)
    note: str = ""  # why not, when "none"; what is missing, when bwrap holds less than whole

    def warning(self) -> str | None:
        """What a report says when the trials were not isolated from each other."""
        if self.sandbox != "none":
            if not self.note:
                return None
            return (
                f"the exec: agents' sandbox holds less on this machine: {self.note} "
                "(docs/SECURITY.md)"
            )
        return (
            f"trials were not isolated from each other ({self.note}): an exec: agent could "
            "read another trial's environment and files, its per-trial credentials included, "
            "and act in that trial (docs/SECURITY.md)"
        )


class SequentialDesign(BaseModel):
    """How a sequential run (``run --sequential``) decides its cells: rounds of trials, each
    cell stopped once its anytime-valid test decides (chaoseval.analysis.sequential)."""

    alpha: float = Field(default=0.05, gt=0, lt=1)  # family-wise, over every claim of the run
    margin: float = Field(default=0.1, gt=0, lt=1)  # "held": no drop of pass^1 past this
    first: int = Field(default=2, ge=1)  # trials per task in the first round
    round_size: int = Field(default=2, ge=1)  # trials per task each later round adds
    max_trials: int = Field(default=20, ge=1)  # per task and cell
    budget_trials: int | None = Field(default=None, ge=1)  # recorded trials, the run's total
    # How the claims of every cell are tested together (chaoseval.analysis.sequential): "cells",
    # closed testing over the cells' claims that can be true together, mean-merged by cell;
    # "e-holm" (journals written before it), mean-merged by claim.
    method: Literal["cells", "e-holm"] = "cells"
    # Within-cell allocation (chaoseval.analysis.allocation, ``--allocate``): after the first
    # round a task whose paired differences were all the same runs each later trial with this
    # probability (importance-weighted, drawn from streams under ``allocation_seed``, the run
    # seed); None: every task of an undecided cell runs every round.
    settled_rate: float | None = Field(
        default=None, gt=0, le=1, exclude_if=lambda v: v is None
    )
    allocation_seed: int | None = Field(default=None, exclude_if=lambda v: v is None)
    # Each cell's decision as the run left it (a later manifest line of the run writes it
    # after every round): status, the rule that stopped it, its round and trials per task.
    decided: dict[str, dict[str, Any]] | None = Field(default=None, exclude_if=lambda v: v is None)

    def rounds(self) -> list[int]:
        """Each round's cumulative trials per task: first, first + round_size, ... max."""
        out, n = [], min(self.first, self.max_trials)
        while True:
            out.append(n)
            if n >= self.max_trials:
                return out
            n = min(n + self.round_size, self.max_trials)


class RunManifest(BaseModel):
    type: Literal["manifest"] = "manifest"
    schema_version: int = SCHEMA_VERSION
    run_id: str
    chaoseval_version: str
    python: str
    packages: dict[str, str]
    agent: str
    model: ModelSettings
    seed: int
    trials: int
    ks: list[int]
    clock: Literal["virtual", "real"]
    scenarios: list[ScenarioInfo]
    cells: list[Cell]
    concurrency: int
    created_at: datetime
    # Every root cause this run's trials can be blamed on, so a report labels them without
    # loading plugins (schema 2; empty in older journals).
    root_causes: list[RootCause] = Field(default_factory=list)
    # Scenario id -> its reference run; None when not recorded (older journals, imports).
    references: dict[str, ReferenceRun] | None = None
    # How exec: agents were isolated; absent for agents that run in chaoseval's own process
    # (and in journals written before sandboxes).
    isolation: Isolation | None = Field(default=None, exclude_if=lambda v: v is None)
    # The metric declared before the data that report, compare and gate judge by (schema 5;
    # absent in older journals and imports, read as pass^1: chaoseval.analysis.primary).
    primary: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # --max-request-size when not the default (None: the default), so replay serves the
    # trial under the limit it ran under.
    request_limit: int | None = Field(default=None, exclude_if=lambda v: v is None)
    # The --scenarios files and directories (or settings' scenario_paths) the run loaded its
    # scenarios from, absolute; None: the installed packs. Replay lines carry them, and replay
    # and sample load from them when given none.
    scenario_paths: list[str] | None = Field(default=None, exclude_if=lambda v: v is None)
    # The gate rules the run applied (the settings' gate or --gate), so a report shows the same
    # gate; None: no gate was applied.
    gate: list[str] | None = Field(default=None, exclude_if=lambda v: v is None)
    # A sequential run's design (run --sequential); None: every cell ran ``trials`` a task.
    # Then ``trials`` is the most a task and cell may hold, and counts differ by design.
    sequential: SequentialDesign | None = Field(default=None, exclude_if=lambda v: v is None)
    # The model that played the conversational scenarios' users (run --user-model-endpoint:
    # "NAME at URL"); None: the deterministic user.
    user_model: str | None = Field(default=None, exclude_if=lambda v: v is None)

    def run_warnings(self) -> list[str]:
        """What every report of this run says before its figures."""
        warning = self.isolation.warning() if self.isolation is not None else None
        return [warning] if warning else []

    def config_key(self) -> dict[str, Any]:
        """What must match for a resumed run to continue this journal."""
        key: dict[str, Any] = {
            "agent": self.agent,
            "model": self.model.model_dump(),
            "seed": self.seed,
            "scenarios": sorted(s.id for s in self.scenarios),
            "cells": [c.model_dump() for c in self.cells],
            "request_limit": self.request_limit,
        }
        if self.user_model is not None:  # an LLM user (absent otherwise: older keys match)
            key["user_model"] = self.user_model
        return key | (
            {}
            if self.sequential is None
            # The method is not the user's: a resumed journal is decided by the one it recorded.
            else {
                "sequential": self.sequential.model_dump(
                    exclude={"budget_trials", "decided", "method"}
                )
            }
        )
