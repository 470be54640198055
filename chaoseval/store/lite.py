"""The part of a trial line the reports read, decoded without building the record.

msgspec decodes a journal line into these structs and skips every field they do not declare
(step results stay undecoded bytes), several times faster than validating a ``TrialRecord`` and
without its ~26 KB of Python objects. A line these structs refuse is handed to pydantic, so a
corrupt record gets the same ``file:line`` message it always got, and a line pydantic accepts
in lax mode is still read.

:func:`summarize` turns a record (a :class:`LiteRecord` or a ``TrialRecord``: the same field
names) into the per-trial values of :mod:`chaoseval.store.columns`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import msgspec

from chaoseval.model.records import Status
from chaoseval.model.trajectory import Channel, ResultClass, StepKind

__all__ = [
    "ILLEGAL_ERRORS",
    "STATUS",
    "LiteRecord",
    "RefCalls",
    "TrialSummary",
    "call_key",
    "summarize",
]

ILLEGAL_ERRORS = ("no tool named", "invalid arguments", "step budget")
_ACTIONS = frozenset({"tool", "model", "observation", "memory"})
STATUS = {"passed": 0, "failed": 1, "not_evaluable": 2}
OUTCOMES = ("recovered", "fell_back", "failed")


class _Name(msgspec.Struct):
    name: str


class _Artifact(msgspec.Struct):
    name: str
    path: str


class _Check(msgspec.Struct):
    passed: bool


class _Contract(msgspec.Struct):
    held: bool


class _Veto(msgspec.Struct):
    kind: Literal["safety", "hallucination"]
    detail: str
    step: int | None = None
    name: str | None = None


class _Usage(msgspec.Struct):
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


class _Step(msgspec.Struct):
    index: int
    kind: StepKind
    tool: str | None = None
    args: dict[str, Any] | None = None
    result_class: ResultClass | None = None
    result: msgspec.Raw = msgspec.Raw(b"null")
    error: str | None = None
    faults: list[int] = []


class _Fault(msgspec.Struct):
    perturbation: str
    channel: Channel
    kind: str
    detail: dict[str, Any] = {}
    step: int | None = None
    delivered: bool = False


class _Trajectory(msgspec.Struct):
    steps: list[_Step] = []
    faults: list[_Fault] = []


class LiteRecord(msgspec.Struct):
    """A trial line's fields that reports read; the required ones of ``TrialRecord`` are
    declared too, so a line missing one is refused here and gets pydantic's message."""

    type: str
    run_id: str
    trial_id: str
    scenario: str
    cell: str
    index: int
    seed: int
    world_seed: int
    agent: str
    model: msgspec.Raw
    status: Status
    started_at: datetime  # checked as a timestamp, as TrialRecord does (no report reads it)
    schema_version: int = 0
    scenario_tags: list[str] = []
    perturbations: list[_Name] = []
    root_cause: str | None = None
    error: str | None = None
    checks: list[_Check] = []
    vetoes: list[_Veto] = []
    trajectory: _Trajectory = msgspec.field(default_factory=_Trajectory)
    usage: _Usage = msgspec.field(default_factory=_Usage)
    sim_seconds: float = 0.0
    wall_seconds: float = 0.0
    artifacts: list[_Artifact] = []
    contracts: list[_Contract] = []
    channel_overhead: float | None = None
    injection_followed: bool | None = None
    utility: bool | None = None


DECODER = msgspec.json.Decoder(LiteRecord)


def call_key(tool: str | None, args: Mapping[str, Any] | None) -> str:
    """A tool call as the reference comparison keys it (tool and arguments, order-free):
    compact JSON with sorted keys, by msgspec (C; json.dumps took a third of a report's read
    of a journal). Only compared with keys made here, never parsed."""
    return _KEY.encode([tool, args or {}]).decode()


_KEY = msgspec.json.Encoder(order="sorted", enc_hook=str)


@dataclass(slots=True)  # one a scenario: 100k at 100k tasks
class RefCalls:
    """A scenario's passed reference solution: its call keys and tool names."""

    keys: set[str]
    tools: set[str | None]


@dataclass(slots=True)  # one a trial read
class TrialSummary:
    """One trial as the columns hold it, plus the parts kept beside them."""

    values: tuple[Any, ...]  # in the order of builder.NUMERIC
    tools: list[tuple[str, int, int, int]] = field(default_factory=list)  # tool, calls, !ok, dlv
    failing_tool: str | None = None
    # kind, detail, and the veto rule's name when a named rule found it
    vetoes: list[tuple[str, ...]] = field(default_factory=list)
    cls: float | None = None
    browser: tuple[tuple[tuple[str, bool], ...], str | None] | None = None  # faults, screenshot
    # Per model request on the wire: (temperature sent, used, seed sent, used); None: not sent.
    sampling: list[tuple[Any, Any, Any, Any]] = field(default_factory=list)


def _result(value: Any) -> Any:
    return msgspec.json.decode(value) if isinstance(value, msgspec.Raw) else value


def _cls(r: Any) -> float | None:
    for s in r.trajectory.steps:
        if s.kind == "note" and s.tool == "browser":
            result = _result(s.result)
            if isinstance(result, dict):
                return float(result.get("cls", 0.0))
    return None


def _screenshot(r: Any) -> str | None:
    shots = [a for a in r.artifacts if a.name.endswith(".png")]
    failed = [a for a in shots if a.name.startswith("failed")]  # the failing step, else the end
    chosen = (failed or shots)[:1]
    return str(chosen[0].path) if chosen else None


def _reference(tool_steps: Sequence[Any], ref: RefCalls | None) -> tuple[float, float, float]:
    nan = float("nan")
    if ref is None or not tool_steps:
        return nan, nan, nan
    tools, keys = ref.tools, ref.keys
    known = hits = 0
    seen = set()
    for s in tool_steps:  # one loop: every trial with a reference comes through here
        tool = s.tool
        # A call to a tool the reference never calls cannot match one of its calls: not keyed.
        if tool in tools:
            known += 1
            key = call_key(tool, s.args)
            hits += key in keys
            seen.add(key)
    n = len(tool_steps)
    cover = len(keys & seen) / len(keys) if keys else nan
    return hits / n, known / n, cover


def _walk(
    r: Any, faults: Sequence[Any]
) -> tuple[list[Any], list[Any], int, int, int, bool, Any, list[tuple[Any, Any, Any, Any]], int]:
    """One pass over the steps: the tool steps, each one's (tool, 1, not ok, faults
    delivered), actions, kinds used (bit 0 model, bit 1 tool), legal tool calls, whether a
    browser note is there, the tool behind a failure (its first call that did not come back
    ok, else its last), what each model request sent and used (a model channel's step:
    ``args``) and the user turns (the agent's messages to the user). Every trial of a
    journal comes through here: one loop, few calls."""
    vetoes = r.vetoes
    vetoed = (
        {v.step for v in vetoes if v.kind == "safety" and v.step is not None} if vetoes else ()
    )
    tool_steps = []
    tools = []
    sampling = []
    actions = kinds = legal = turns = 0
    note = False
    failing: Any = None
    bad = False  # a tool call that did not come back ok was seen
    n = len(faults)
    for s in r.trajectory.steps:
        kind = s.kind
        if kind == "tool":
            tool_steps.append(s)
            kinds |= 2
            actions += 1
            err = s.error
            if not (vetoed and s.index in vetoed) and not (err and _illegal(err.lower())):
                legal += 1
            at = s.faults
            dlv = sum(faults[i].delivered for i in at if i < n) if at else 0
            tool = s.tool
            if s.result_class in _OK:
                tools.append((tool or "?", 1, 0, dlv))
                if not bad:
                    failing = tool
            else:
                tools.append((tool or "?", 1, 1, dlv))
                if not bad:
                    failing, bad = tool, True
        elif kind == "model":
            kinds |= 1
            actions += 1
            a = s.args
            if a and "sent_temperature" in a:
                sent = (a["sent_temperature"], a.get("temperature"), a["sent_seed"], a.get("seed"))
                sampling.append(tuple(map(_scalar, sent)))
        elif kind in _ACTIONS:
            actions += 1
        elif kind == "user":
            turns += 1
        elif kind == "note" and s.tool == "browser":
            note = True
    return tool_steps, tools, actions, kinds, legal, note, failing, sampling, turns


_OK = (None, "ok")


def _illegal(err: str) -> bool:
    return any(e in err for e in ILLEGAL_ERRORS)


def _scalar(value: Any) -> Any:
    """A sampling value as a tally key: a journal written before the model channel refused
    a non-numeric temperature or seed can hold a list or an object there (as its JSON)."""
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def _all_passed(checks: Sequence[Any]) -> bool:
    for c in checks:  # noqa: SIM110  (all() over a generator: twice the calls a trial)
        if not c.passed:
            return False
    return True


def summarize(r: Any, refs: Mapping[str, RefCalls]) -> TrialSummary:
    """The per-trial values of one record (see builder.NUMERIC for their order)."""
    faults = r.trajectory.faults
    tool_steps, tools, actions, kinds, legal, note, failing, sampling, turns = _walk(r, faults)
    status = r.status
    scored = status != "not_evaluable"
    if scored and tool_steps and (ref := refs.get(r.scenario)) is not None:
        correct, right, cover = _reference(tool_steps, ref)
    else:
        correct = right = cover = _NAN
    u = r.usage
    vetoes = r.vetoes
    if faults:
        delivered = sum(f.delivered for f in faults)
        absorbed = sum(bool(f.detail and f.detail.get("absorbed")) for f in faults)
    else:
        delivered = absorbed = 0
    if vetoes:
        safety = sum(v.kind == "safety" for v in vetoes)
        hallucination = len(vetoes) - safety
    else:
        safety = hallucination = 0
    attacked = -1 if r.injection_followed is None else int(r.injection_followed)
    checks, contracts = r.checks, r.contracts
    passed = _all_passed(checks)  # (every check passed: True when there is none)
    if not scored:
        utility = -1
    elif r.utility is not None:
        utility = int(r.utility)
    else:  # model.records.task_done: every check ran and passed, or a contract held
        utility = int((bool(checks) and passed) or any(c.held for c in contracts))
    # Under a contract: recovered / fell back (the contract held) / failed.
    outcome = (2 if status != "passed" else 0 if passed else 1) if contracts else -1
    values = (
        r.index,
        r.seed,
        STATUS[status],
        len(faults),
        delivered,
        absorbed,
        kinds,
        actions,
        len(tool_steps),
        legal,
        correct,
        right,
        cover,
        u.input_tokens + u.output_tokens,
        u.cost,
        u.model_calls,
        r.sim_seconds,
        r.wall_seconds,
        _NAN if r.channel_overhead is None else r.channel_overhead,
        outcome,
        safety,
        hallucination,
        attacked,
        utility,
        turns,
    )
    vetoed = [_veto(v) for v in vetoes] if vetoes else []
    out = TrialSummary(values, tools, failing, vetoed, None, None, sampling)
    if note:
        out.cls = _cls(r)
        if out.cls is not None:
            out.browser = (tuple((f.kind, bool(f.delivered)) for f in faults), _screenshot(r))
    return out


_NAN = float("nan")


def _veto(v: Any) -> tuple[str, ...]:
    return (v.kind, v.detail) if v.name is None else (v.kind, v.detail, v.name)
