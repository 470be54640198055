"""A trajectory's steps as far as the task's semantics go, read from a record or a line.

Each step is reduced to what a comparison of two trajectories needs (tool, normalised
arguments, result class, the delivered faults that hit it, and the answer; a turn of a
conversation by what the agent asked for or proposed and whether the user agreed or left, never
its wording, so two conversations compare by what was settled); model-call bookkeeping, notes
and timings are dropped. ``diverge`` aligns failures with successes on
these; the report's clean-twin timelines (``analysis.twins``) compare twins on them.

A journal line can be read with :data:`DECODER`, which decodes only the fields used here
(msgspec; results, timings and usage are skipped), into a :class:`LiteTrial` that
:func:`semantic_steps` takes as it takes a ``TrialRecord``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from chaoseval.model.records import TrialRecord
from chaoseval.model.trajectory import ResultClass, Step, StepKind, Trajectory, UserTurnData

__all__ = [
    "DECODER",
    "LiteTrial",
    "SemStep",
    "common_prefix",
    "crash_reason",
    "semantic_step",
    "semantic_steps",
    "user_step",
]


class _Data(msgspec.Struct):
    gave_up: bool = False  # only an answer step's data has it (AnswerData)
    # A user turn's (UserTurnData): what the agent asked for, proposed, and how the user took it.
    asked: list[str] = []
    confirm: bool = False
    agreed: bool = False
    ended: bool = False


class _Step(msgspec.Struct):
    kind: StepKind
    tool: str | None = None
    args: msgspec.Raw = msgspec.Raw(b"null")  # decoded only for a call not met before
    result_class: ResultClass | None = None
    faults: list[int] = []
    data: _Data = msgspec.field(default_factory=_Data)

    @property
    def gave_up(self) -> bool:
        return self.data.gave_up


class _Fault(msgspec.Struct):
    kind: str
    delivered: bool = False


class _Trajectory(msgspec.Struct):
    steps: list[_Step] = []
    faults: list[_Fault] = []


class _Check(msgspec.Struct):
    name: str
    passed: bool


class _Veto(msgspec.Struct):
    kind: str


class LiteTrial(msgspec.Struct):
    """The fields of a trial line that diverge reads; msgspec skips the rest (results,
    timings, usage), so a line costs a few microseconds and no pydantic model."""

    trial_id: str
    root_cause: str | None = None
    error: str | None = None  # what a crashed trial raised (crash_reason)
    checks: list[_Check] = []
    vetoes: list[_Veto] = []
    trajectory: _Trajectory = msgspec.field(default_factory=_Trajectory)


DECODER = msgspec.json.Decoder(LiteTrial)


@dataclass(frozen=True)
class SemStep:
    """One step as far as the task's semantics go."""

    kind: str  # tool | answer | observation | user (| model, in the report's twin timelines)
    tool: str | None = None
    args: tuple[tuple[str, Any], ...] = ()
    result: str | None = None
    faults: tuple[str, ...] = ()  # delivered fault kinds, e.g. ("timeout",)
    gave_up: bool = False

    def describe(self) -> str:
        if self.kind == "answer":
            return "gave up" if self.gave_up else "answered"
        if self.kind == "observation":
            return "looked at the page"
        if self.kind == "user":
            return _turn_text(dict(self.args), self.result) + (
                f" [{', '.join(self.faults)}]" if self.faults else ""
            )
        if self.kind == "model":  # a model-channel call (the report's clean-twin timelines)
            return f"model call -> {self.result}" + (
                f" [{', '.join(self.faults)}]" if self.faults else ""
            )
        args = ", ".join(f"{k}={v!r}" for k, v in self.args)
        text = f"{self.tool}({args}) -> {self.result}"
        if self.faults:
            text += f" [{', '.join(self.faults)}]"
        return text


def _turn_text(args: dict[str, Any], result: str | None) -> str:
    """A user turn in words: 'asked the user for order_id: they replied'."""
    asked = args.get("asked") or ()
    what = (
        "proposed to the user"
        if args.get("proposed")
        else f"asked the user for {', '.join(asked)}"
        if asked
        else "wrote to the user"
    )
    return what + {"agreed": ": they agreed", "left": ": they left"}.get(
        result or "", ": they replied"
    )


def user_step(asked: Sequence[str], confirm: bool, agreed: bool, ended: bool,
              faults: tuple[str, ...] = ()) -> SemStep:  # fmt: skip
    """A turn as far as the task goes: the facts asked for, whether it was a proposal, and
    whether the user agreed, left or just replied."""
    result = "agreed" if agreed else "left" if ended else "replied"
    args = (("asked", tuple(sorted(asked))), ("proposed", confirm))
    return SemStep(kind="user", args=args, result=result, faults=faults)


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_norm(v) for v in value)
    return value


def _fault_kinds(traj: Trajectory | _Trajectory, step: Step | _Step) -> tuple[str, ...]:
    if not step.faults:
        return ()
    return tuple(
        traj.faults[i].kind
        for i in step.faults
        if 0 <= i < len(traj.faults) and traj.faults[i].delivered
    )


def _args(args: dict[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, _norm(v)) for k, v in (args or {}).items()))


def semantic_step(traj: Trajectory, s: Step) -> SemStep | None:
    """One step as far as the task's semantics go; None for bookkeeping (model calls, notes)."""
    if s.kind == "tool":
        return SemStep(
            kind="tool",
            tool=s.tool,
            args=_args(s.args),
            result=s.result_class,
            faults=_fault_kinds(traj, s),
        )
    if s.kind == "observation":
        return SemStep(kind="observation", faults=_fault_kinds(traj, s))
    if s.kind == "answer":
        return SemStep(kind="answer", gave_up=s.gave_up)
    if s.kind == "user" and isinstance(s.data, UserTurnData):
        d = s.data
        return user_step(d.asked, d.confirm, d.agreed, d.ended, _fault_kinds(traj, s))
    return None


def semantic_steps(record: TrialRecord | LiteTrial) -> list[SemStep]:
    if isinstance(record, LiteTrial):
        return _lite_steps(record.trajectory)
    traj = record.trajectory
    return [x for s in traj.steps if (x := semantic_step(traj, s)) is not None]


def _lite_steps(traj: _Trajectory) -> list[SemStep]:
    """semantic_step's steps of a line read by _DECODER: a tool call met before (its raw
    arguments, result and delivered faults) is not normalised again."""
    out = []
    for s in traj.steps:
        if s.kind == "tool":
            out.append(_tool_step(s.tool, bytes(s.args), s.result_class, _fault_kinds(traj, s)))
        elif s.kind == "observation":
            out.append(SemStep(kind="observation", faults=_fault_kinds(traj, s)))
        elif s.kind == "answer":
            out.append(SemStep(kind="answer", gave_up=s.gave_up))
        elif s.kind == "user":
            d = s.data
            out.append(user_step(d.asked, d.confirm, d.agreed, d.ended, _fault_kinds(traj, s)))
    return out


@functools.lru_cache(maxsize=1 << 16)
def _tool_step(
    tool: str | None, args: bytes, result: str | None, faults: tuple[str, ...]
) -> SemStep:
    return SemStep("tool", tool, _args(msgspec.json.decode(args)), result, faults)


def crash_reason(record: TrialRecord | LiteTrial, width: int = 160) -> str | None:
    """'crashed: AttributeError: ...' for a trial the agent crashed (its recorded error, first
    line, shortened), else None: every view that shows the trial says why it crashed instead of
    describing where its steps stopped."""
    if record.root_cause != "crash":
        return None
    lines = [line for line in (record.error or "").splitlines() if line.strip()]
    # A traceback ends with the exception; any other message starts with what matters.
    line = lines[-1] if lines and lines[0].startswith("Traceback") else (lines or [""])[0]
    text = " ".join(line.split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"crashed: {text}" if text else "crashed (no error recorded)"


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
