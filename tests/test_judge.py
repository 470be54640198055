"""Root-cause attribution: a delivered fault is blamed only where it shaped the failure."""

from __future__ import annotations

from datetime import datetime

from chaoseval.engine.judge import judge
from chaoseval.engine.toolbox import TrialState
from chaoseval.errors import ToolError
from chaoseval.model.clock import VirtualClock
from chaoseval.model.trajectory import Fault
from chaoseval.model.world import fresh_world
from chaoseval.seams.agent import AgentOutput


def _state(*steps: tuple[str, str, dict], faults: tuple[tuple[str, int, dict], ...] = ()):
    state = TrialState()
    for tool, result_class, args in steps:
        state.trajectory.add_step("tool", tool=tool, args=args, result_class=result_class)
    for kind, step, detail in faults:
        fault = Fault(perturbation=kind, channel="tool", kind=kind, step=step, detail=detail)
        fault.delivered = True
        state.trajectory.add_fault(fault)
    return state


def _verdict(tiny, state, output=None, error=None):
    with fresh_world(tiny.tables, VirtualClock(datetime(2026, 1, 1)), 1, tiny.givens) as world:
        return judge(tiny, world, state, output, error)


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
