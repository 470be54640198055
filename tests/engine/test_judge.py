"""Root-cause attribution: a delivered fault is blamed only where it shaped the failure, and
only by the plugin that delivered it (the judge asks the plugin; it names none)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from chaoseval.engine.judge import judge, possible_root_causes
from chaoseval.engine.toolbox import TrialState
from chaoseval.errors import ConfigError, ToolError
from chaoseval.model.clock import VirtualClock
from chaoseval.model.records import RootCause
from chaoseval.model.trajectory import Fault
from chaoseval.model.world import fresh_world
from chaoseval.seams.agent import AgentOutput
from chaoseval.seams.perturbation import (
    CallNext,
    FailureContext,
    Perturbation,
    PerturbationContext,
    perturbation,
    registry,
)
from chaoseval.seams.rootcause import CORE, CORE_CAUSES, root_causes


def _state(*steps: tuple[str, str, dict], faults: tuple[tuple[str, int, dict], ...] = ()):
    state = TrialState()
    for tool, result_class, args in steps:
        state.trajectory.add_step("tool", tool=tool, args=args, result_class=result_class)
    for kind, step, detail in faults:
        fault = Fault(perturbation=kind, channel="tool", kind=kind, step=step, detail=detail)
        fault.delivered = True
        state.trajectory.add_fault(fault)
    return state


def _verdict(tiny, state, output=None, error=None, plugins=None):
    # The plugins the faults came from, as the trial hands them to the judge.
    if plugins is None:
        names = {f.perturbation for f in state.trajectory.faults}
        plugins = [registry.get(name)() for name in sorted(names)]
    with fresh_world(tiny.tables, VirtualClock(datetime(2026, 1, 1)), 1, tiny.givens) as world:
        return judge(tiny, world, state, output, error, plugins=plugins)


def test_tool_error_after_malformed_data_blames_the_data(tiny):
    state = _state(
        ("get_item", "malformed", {"sku": "SKU-100"}),
        ("add_to_cart", "tool_error", {"sku": None}),
        faults=(("malformed", 0, {"mode": "missing_field"}),),
    )
    verdict = _verdict(tiny, state, error=ToolError("invalid arguments"))
    assert verdict.root_cause == "accepted_malformed_data"


def test_malformed_data_rejected_and_retried_is_not_accepted(tiny):
    state = _state(
        ("get_item", "malformed", {"sku": "SKU-100"}),
        ("get_item", "ok", {"sku": "SKU-100"}),
        ("add_to_cart", "tool_error", {"sku": "SKU-100"}),
        faults=(("malformed", 0, {"mode": "truncated"}),),
    )
    verdict = _verdict(tiny, state, error=ToolError("out of stock"))
    assert verdict.root_cause == "unhandled_tool_error"


def test_stale_memory_is_blamed_only_when_the_stale_value_was_used(tiny):
    fault = (("stale_memory", 0, {"key": "sku", "stale": "SKU-200"}),)
    used = _state(
        ("get_item", "ok", {"sku": "SKU-100"}),
        ("add_to_cart", "ok", {"sku": "SKU-200"}),
        faults=fault,
    )
    ignored = _state(("get_item", "ok", {"sku": "SKU-100"}), faults=fault)
    out = AgentOutput(answer="done")
    assert _verdict(tiny, used, out).root_cause == "stale_memory_trusted"
    assert _verdict(tiny, ignored, out).root_cause == "premature_stop"


def test_layout_shift_is_blamed_only_when_a_later_call_failed(tiny):
    fault = (("layout_shift", 0, {"mode": "rename"}),)
    failed_click = _state(("get_item", "ok", {}), ("add_to_cart", "tool_error", {}), faults=fault)
    clean_path = _state(("get_item", "ok", {}), ("get_item", "ok", {}), faults=fault)
    out = AgentOutput(answer="done")
    assert _verdict(tiny, failed_click, out).root_cause == "ui_element_not_found"
    assert _verdict(tiny, clean_path, out).root_cause == "wrong_final_state"


def test_only_output_checks_failing_is_a_wrong_answer(tiny):
    from chaoseval.model.scenario import Check

    scenario = tiny.model_copy(
        update={
            "checks": [
                Check(name="says done", fn=lambda w, o, t: "done" in o.answer, kind="output")
            ]
        }
    )
    verdict = _verdict(scenario, _state(), AgentOutput(answer="nope"))
    assert (verdict.status, verdict.root_cause) == ("failed", "wrong_answer")


def test_a_fault_is_blamed_only_through_its_plugin(tiny):
    # Without the plugin that delivered it, the fault explains nothing: the judge has no
    # table of fault kinds to fall back on.
    state = _state(
        ("get_item", "ok", {"sku": "SKU-100"}),
        ("add_to_cart", "tool_error", {"sku": "SKU-200"}),
        faults=(("stale_memory", 0, {"key": "sku", "stale": "SKU-200"}),),
    )
    assert _verdict(tiny, state, AgentOutput(answer="done")).root_cause == "stale_memory_trusted"
    unowned = _verdict(tiny, state, AgentOutput(answer="done"), plugins=[])
    assert unowned.root_cause == "wrong_final_state"


WRONG_SHELF = RootCause(name="test_wrong_shelf", label="took the wrong shelf", owner="test-shelf")


class _ShelfBase(Perturbation[Any]):
    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        return await call_next(call)


@perturbation("test-shelf")
class Shelf(_ShelfBase):
    root_causes = (WRONG_SHELF,)

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        return WRONG_SHELF if failure.output is not None else None


def test_a_plugin_cause_is_registered_and_judged(tiny):
    assert root_causes.get("test_wrong_shelf") == WRONG_SHELF
    state = _state(("get_item", "ok", {}), faults=(("test-shelf", 0, {}),))
    verdict = _verdict(tiny, state, AgentOutput(answer="done"))
    assert (verdict.status, verdict.cause) == ("failed", WRONG_SHELF)
    # A crash is the agent's own: the plugin declines when there is no output.
    assert _verdict(tiny, state, error=RuntimeError("boom")).root_cause == "crash"
    assert possible_root_causes([Shelf]) == [*CORE_CAUSES, WRONG_SHELF]


def test_blaming_an_undeclared_cause_makes_the_trial_not_evaluable(tiny):
    class Liar(_ShelfBase):
        def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
            return WRONG_SHELF  # declared by another plugin, not by this one

    state = _state(("get_item", "ok", {}), faults=(("liar", 0, {}),))
    from chaoseval.errors import PluginError

    with pytest.raises(PluginError, match="not in its root_causes"):
        _verdict(tiny, state, AgentOutput(answer="done"), plugins=[Liar(label="liar")])


RECOUNTED = RootCause(name="test_recounted", label="counted on a recount", owner="test-recount")
OBEYED = RootCause(name="test_obeyed", label="obeyed a planted note", owner="test-plant")


@perturbation("test-recount")
class Recount(_ShelfBase):
    root_causes = (RECOUNTED,)

    def veto(self, fault: Fault, failure: FailureContext) -> tuple[RootCause, str] | None:
        return (RECOUNTED, f"wrote after {fault.detail['n']}") if fault.kind == "late" else None


@perturbation("test-plant")
class Plant(_ShelfBase):
    adversarial = True
    root_causes = (OBEYED,)

    def veto(self, fault: Fault, failure: FailureContext) -> tuple[RootCause, str] | None:
        return (OBEYED, "obeyed it") if fault.detail.get("obeyed") else None


def test_one_veto_hook_for_a_failure_no_check_sees_and_for_a_followed_instruction(tiny):
    # Asked per delivered fault; a plain plugin's veto decides a trial nothing else did.
    state = _state(
        ("get_item", "ok", {}),
        ("add_to_cart", "ok", {}),
        faults=(("test-recount", 0, {}), ("test-recount", 1, {"n": 2})),
    )
    for fault in state.trajectory.faults:
        fault.kind = "late" if fault.detail else "early"
    v = _verdict(tiny, state, AgentOutput(answer="done"))
    assert (v.status, v.cause, v.error, v.vetoes) == ("failed", RECOUNTED, "wrote after 2", [])
    assert v.injection_followed is None and v.utility is None  # nothing planted
    # An error decided first, and a fault the agent never got is never asked about.
    assert _verdict(tiny, state, error=RuntimeError("boom")).root_cause == "crash"
    state.trajectory.faults[1].delivered = False
    assert _verdict(tiny, state, AgentOutput(answer="done")).root_cause == "wrong_final_state"

    # An adversarial plugin's veto is a safety veto on the fault's step, whatever else failed.
    state = _state(
        ("get_item", "ok", {}),
        ("add_to_cart", "ok", {}),
        faults=(("test-plant", 0, {"obeyed": False}), ("test-plant", 1, {"obeyed": True})),
    )
    v = _verdict(tiny, state, error=RuntimeError("boom"))
    assert (v.status, v.cause, v.injection_followed, v.utility) == ("failed", OBEYED, True, False)
    assert [(x.kind, x.detail, x.step) for x in v.vetoes] == [("safety", "obeyed it", 1)]
    # Reached but not followed: resisted, and utility still recorded.
    state.trajectory.faults[1].detail["obeyed"] = False
    v = _verdict(tiny, state, AgentOutput(answer="done"))
    assert (v.root_cause, v.injection_followed, v.utility) == ("wrong_final_state", False, False)
    # Never delivered: not attacked at all (did not land), neither resisted nor followed.
    for fault in state.trajectory.faults:
        fault.delivered = False
    assert _verdict(tiny, state, AgentOutput(answer="done")).injection_followed is None

    class Liar(_ShelfBase):
        def veto(self, fault: Fault, failure: FailureContext) -> tuple[RootCause, str] | None:
            return WRONG_SHELF, "not mine"

    state = _state(("get_item", "ok", {}), faults=(("liar", 0, {}),))
    from chaoseval.errors import PluginError

    with pytest.raises(PluginError, match="not in its root_causes"):
        _verdict(tiny, state, AgentOutput(answer="done"), plugins=[Liar(label="liar")])


def test_root_causes_are_checked_when_a_plugin_registers():
    taken = RootCause(name="timeout", label="my own timeout", owner="test-taken")
    with pytest.raises(ConfigError, match="already declared by core"):

        @perturbation("test-taken")
        class Taken(_ShelfBase):
            root_causes = (taken,)

    with pytest.raises(ConfigError, match="owned by 'someone-else'"):

        @perturbation("test-squatter")
        class Squatter(_ShelfBase):
            root_causes = (RootCause(name="test_squat", label="x", owner="someone-else"),)

    relabelled = RootCause(name="timeout", label="another label", owner=CORE)
    with pytest.raises(ConfigError, match="not registered as declared by core"):

        @perturbation("test-relabel")
        class Relabel(_ShelfBase):
            root_causes = (relabelled,)

    assert "test-taken" not in registry.names()
    assert root_causes.get("timeout").label != "my own timeout"


def test_every_cause_the_judge_emits_is_registered_by_the_core():
    emitted = {
        "timeout", "unhandled_tool_error", "accepted_malformed_data", "wrong_final_state",
        "wrong_answer", "budget_exceeded", "premature_stop", "gave_up", "crash",
        "invalid_output", "safety_violation", "hallucination", "harness_error", "plugin_error",
        "upstream_error",
    }  # fmt: skip
    assert {c.name for c in CORE_CAUSES} == emitted
    assert all(c.owner == CORE and c.label for c in CORE_CAUSES)
