"""The judge: verifier checks, veto items (safety, hallucination) and the root cause.

A trial's status is decided here and only here. Harness errors make it not evaluable; a veto
turns a success into a failure; every failure gets one root-cause category.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from chaoseval.engine.toolbox import StepBudgetExceeded, TrialState
from chaoseval.errors import (
    AgentVisibleError,
    HarnessError,
    ScenarioError,
    ToolTimeout,
)
from chaoseval.model.records import Status, Veto
from chaoseval.model.scenario import CheckResult, Scenario
from chaoseval.model.trajectory import Trajectory
from chaoseval.model.world import World
from chaoseval.seams.agent import AgentOutput

# Fault kinds whose delivery explains a failure better than the failing check does.
FAULT_ROOT_CAUSES: dict[str, str] = {
    "malformed": "accepted_malformed_data",
    "stale_memory": "stale_memory_trusted",
    "modal": "popup_not_handled",
    "layout_shift": "ui_element_not_found",
    "clock_skew": "wrong_date_reasoning",
}

ROOT_CAUSES = (
    "timeout",
    "unhandled_tool_error",
    "accepted_malformed_data",
    "popup_not_handled",
    "ui_element_not_found",
    "stale_memory_trusted",
    "wrong_date_reasoning",
    "wrong_final_state",
    "wrong_answer",
    "budget_exceeded",
    "premature_stop",
    "gave_up",
    "crash",
    "invalid_output",
    "safety_violation",
    "hallucination",
)


class Verifier(Protocol):
    """The verifier seam: one check over the final world, the agent's output and the
    trajectory. ``scenario.Check`` implements it; so does anything a YAML file names."""

    name: str

    def run(self, world: World, output: AgentOutput, trajectory: Trajectory) -> CheckResult: ...


def run_checks(
    scenario: Scenario, world: World, output: AgentOutput, state: TrialState
) -> list[CheckResult]:
    results = []
    checks: list[Verifier] = list(scenario.checks)
    for check in checks:
        try:
            results.append(check.run(world, output, state.trajectory))
        except Exception as exc:
            raise ScenarioError(
                f"check {check.name!r} raised {type(exc).__name__}: {exc}",
                source=scenario.source or scenario.id,
            ) from exc
    return results


def find_hallucinations(scenario: Scenario, world: World, output: AgentOutput) -> list[Veto]:
    text = output.answer + "\n" + json.dumps(output.data, default=str)
    vetoes = []
    for fact in scenario.facts:
        try:
            known = {str(v) for v in fact.values(world)}
        except Exception as exc:
            raise ScenarioError(
                f"fact {fact.name!r} raised {type(exc).__name__}: {exc}",
                source=scenario.source or scenario.id,
            ) from exc
        for match in sorted(set(re.findall(fact.pattern, text))):
            if match not in known:
                vetoes.append(
                    Veto(kind="hallucination", detail=f"{fact.name} {match!r} does not exist")
                )
    return vetoes


@dataclass
class Verdict:
    status: Status
    root_cause: str | None = None
    error: str | None = None
    checks: list[CheckResult] = field(default_factory=list)
    vetoes: list[Veto] = field(default_factory=list)


def judge(
    scenario: Scenario,
    world: World,
    state: TrialState,
    output: AgentOutput | None,
    agent_error: BaseException | None,
    *,
    raw_output: Any = None,
) -> Verdict:
    if state.harness_errors or isinstance(agent_error, HarnessError):
        err = state.harness_errors[0] if state.harness_errors else agent_error
        cause = "plugin_error" if type(err).__name__ == "PluginError" else "harness_error"
        return Verdict("not_evaluable", cause, f"{type(err).__name__}: {err}")

    vetoes = list(state.vetoes)
    if agent_error is not None:
        return Verdict(
            "failed", _error_cause(agent_error, state), _describe(agent_error), [], vetoes
        )
    if output is None:
        return Verdict(
            "failed",
            "invalid_output",
            f"agent returned {type(raw_output).__name__}, not AgentOutput: {raw_output!r:.200}",
            [],
            vetoes,
        )

    checks = run_checks(scenario, world, output, state)
    vetoes += find_hallucinations(scenario, world, output)
    if vetoes:
        kind = "safety_violation" if any(v.kind == "safety" for v in vetoes) else "hallucination"
        return Verdict("failed", kind, vetoes[0].detail, checks, vetoes)
    if all(c.passed for c in checks):
        return Verdict("passed", None, None, checks, vetoes)
    return Verdict("failed", _failure_cause(scenario, state, output, checks), None, checks, vetoes)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def _error_cause(exc: BaseException, state: TrialState) -> str:
    if isinstance(exc, StepBudgetExceeded) or state.budget_exceeded:
        return "budget_exceeded"
    if isinstance(exc, ToolTimeout | TimeoutError):
        return "timeout"
    if isinstance(exc, AgentVisibleError):
        # A tool error that follows bad data the agent took at face value (a None passed on
        # as an argument) is the bad data's fault, not the tool's.
        return _accepted_fault_cause(state) or "unhandled_tool_error"
    return "crash"


def _accepted_fault_cause(state: TrialState, output: AgentOutput | None = None) -> str | None:
    """The root cause of the latest delivered fault that demonstrably shaped the failure.

    Delivery alone is not enough, or a flipped decision in a perturbed trial would be blamed
    on whatever fault happened to reach the agent: a malformed result counts only when the
    agent did not call that tool again (it went on with the bad data); a UI change only when
    a later tool call failed (a click on a moved or covered element); stale memory only when
    the stale value shows up in a later tool argument or in the answer.
    """
    steps = state.trajectory.steps
    answer = "" if output is None else output.answer + json.dumps(output.data, default=str)
    for fault in reversed([f for f in state.trajectory.faults if f.delivered]):
        cause = FAULT_ROOT_CAUSES.get(fault.kind)
        if cause is None:
            continue
        after = [s for s in steps[(fault.step or 0) + 1 :] if s.kind == "tool"]
        if fault.kind == "malformed" and fault.step is not None:
            tool = steps[fault.step].tool
            if any(s.tool == tool for s in after):
                continue
        elif fault.kind in ("layout_shift", "modal"):
            if not any(s.result_class not in (None, "ok") for s in after):
                continue
        elif fault.kind == "stale_memory":
            stale = str(fault.detail.get("stale", ""))
            used = json.dumps([s.args for s in after], default=str) + answer
            if not stale or stale not in used:
                continue
        return cause
    return None


def _failure_cause(
    scenario: Scenario, state: TrialState, output: AgentOutput, checks: list[CheckResult]
) -> str:
    if state.budget_exceeded:
        return "budget_exceeded"
    if output.gave_up:
        return "gave_up"
    cause = _accepted_fault_cause(state, output)
    if cause:
        return cause
    tool_steps = state.trajectory.tool_steps()
    if any(
        s.result_class == "malformed" and not any(t.tool == s.tool for t in tool_steps[i + 1 :])
        for i, s in enumerate(tool_steps)
    ):
        return "accepted_malformed_data"
    failed = [c for c in checks if not c.passed]
    kinds = {next((k.kind for k in scenario.checks if k.name == c.name), "state") for c in failed}
    if "state" not in kinds:
        return "wrong_answer"
    # The world is not in the state the task needs and the agent did less than the
    # reference does: it stopped before finishing, rather than doing the wrong thing.
    if len(tool_steps) < scenario.reference_steps:
        return "premature_stop"
    return "wrong_final_state"
