"""The observation, model, memory and clock channels: each perturbation reaches the agent (the
fault ledger says delivered) and lowers the measured pass^k of the trusting ``naive`` harness
against clean; where ``resilient`` is built to cope (popups, moved buttons, stale memory) it
degrades less. All numbers come from small matrices run here, never from tables."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# Imported for their registration, so the tests run before the entry points are installed.
import chaoseval.bundled.perturbations.clock_skew
import chaoseval.bundled.perturbations.layout_shift
import chaoseval.bundled.perturbations.sampling
import chaoseval.bundled.perturbations.stale_memory  # noqa: F401
from chaoseval.analysis.metrics import pass_hat_k
from chaoseval.bundled.scenarios import memory_sessions, ui_admin, vending
from chaoseval.engine.runner import RunConfig, run
from chaoseval.engine.ui import (
    LayoutPlan,
    ModalPlan,
    UiState,
    apply_layout,
    apply_modal,
    choose,
    elements,
    label_score,
)
from chaoseval.errors import ToolError
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings, TrialRecord
from chaoseval.model.scenario import Scenario
from chaoseval.seams.agent import load_agent

COLD = ModelSettings(temperature=0.0)
UI = [ui_admin.refund_admin, ui_admin.checkout]
MEMORY = [
    memory_sessions.replacement_address,
    memory_sessions.refund_window,
    memory_sessions.order_followup,
]


def matrix(
    scenarios: Sequence[Scenario],
    agent: str,
    specs: list[str],
    trials: int = 6,
    model: ModelSettings = COLD,
) -> list[TrialRecord]:
    config = RunConfig(
        scenarios=scenarios,
        agent=load_agent(agent),
        agent_name=agent,
        cells=parse_cells(specs),
        trials=trials,
        seed=11,
        model=model,
        journal=None,
        concurrency=8,
    )
    return run(config).records


def pass_k(records: list[TrialRecord], cell: str, k: int = 3) -> float:
    """Macro pass^k over the scenarios of one cell (per task, then the plain average)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in records:
        if r.cell == cell:
            assert r.status != "not_evaluable", r.error
            counts[r.scenario][0] += 1
            counts[r.scenario][1] += r.passed
    assert counts, f"no trials in cell {cell!r}"
    return sum(pass_hat_k(n, c, k) for n, c in counts.values()) / len(counts)


def delivered(records: list[TrialRecord], cell: str, kind: str) -> float:
    """Share of the cell's trials in which a fault of this kind reached the agent."""
    cell_records = [r for r in records if r.cell == cell]
    hit = [any(f.kind == kind and f.delivered for f in r.trajectory.faults) for r in cell_records]
    return sum(hit) / len(hit)


def cell_named(records: list[TrialRecord], prefix: str) -> str:
    return next(r.cell for r in records if r.cell.startswith(prefix))


# --- observation channel: layout shift and popups ---------------------------------------------


@pytest.fixture(scope="module")
def ui_runs() -> dict[str, list[TrialRecord]]:
    return {a: matrix(UI, a, ["layout_shift", "modal"]) for a in ("naive", "resilient")}


@pytest.mark.parametrize("cell,kind", [("layout_shift", "layout_shift"), ("modal", "modal")])
def test_ui_perturbations_reach_the_agent_and_hurt_naive_more(ui_runs, cell, kind) -> None:
    naive, resilient = ui_runs["naive"], ui_runs["resilient"]
    assert delivered(naive, cell, kind) == 1.0
    assert delivered(resilient, cell, kind) == 1.0
    naive_drop = pass_k(naive, "clean") - pass_k(naive, cell)
    resilient_drop = pass_k(resilient, "clean") - pass_k(resilient, cell)
    assert naive_drop >= 0.5, (naive_drop, pass_k(naive, "clean"))
    assert resilient_drop < naive_drop
    causes = {r.root_cause for r in naive if r.cell == cell and not r.passed}
    assert {"layout_shift": "ui_element_not_found", "modal": "popup_not_handled"}[kind] in causes


def test_scripted_reference_survives_every_ui_perturbation() -> None:
    records = matrix(UI, "scripted", ["layout_shift:mode=shuffle|rename|all", "modal"], trials=3)
    assert all(r.passed for r in records), [(r.trial_id, r.error) for r in records if not r.passed]


def test_modal_swallows_clicks_until_dismissed() -> None:
    state = UiState(modal=ModalPlan("cookie-1", "btn-x", "Cookies", "We use cookies", "Accept all"))
    page = apply_modal(ui_admin.REFUND_PAGE.format(**_refund_givens()), state.modal)
    dialog_buttons = [e for e in elements(page) if e.dialog]
    assert [e.id for e in dialog_buttons] == ["btn-x"]

    class FakeWorld:
        pass

    world = FakeWorld()
    world._ui_state = state  # type: ignore[attr-defined]
    from chaoseval.engine.ui import resolve

    with pytest.raises(ToolError, match="dismiss it first"):
        resolve(world, "approve-refund")  # type: ignore[arg-type]
    assert resolve(world, "btn-x") is None  # type: ignore[arg-type]
    assert resolve(world, "approve-refund") == "approve-refund"  # type: ignore[arg-type]


def _refund_givens() -> dict:
    return {
        "request_id": "RQ-1000",
        "customer": "A",
        "order_id": "ORD-1",
        "amount": 10.0,
        "reason": "x",
        "status": "pending",
    }


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), relabel=st.floats(0, 1))
def test_layout_shift_keeps_every_action_reachable_under_a_new_id(seed, relabel) -> None:
    page = ui_admin.REFUND_PAGE.format(**_refund_givens())
    state = UiState()
    shifted = apply_layout(
        page, LayoutPlan(seed, shuffle=True, rename=True, relabel=relabel), state
    )
    before, after = elements(page), elements(shifted)
    assert sorted(state.aliases[e.id] for e in after) == sorted(e.id for e in before)
    assert not {e.id for e in after} & {e.id for e in before}  # every old id is gone
    assert [state.aliases[e.id] for e in after] != [e.id for e in before]  # buttons moved
    # Same seed, same page: a re-render shows the agent exactly the same layout.
    assert apply_layout(page, LayoutPlan(seed, True, True, relabel), UiState()) == shifted


def test_fuzzy_label_match_prefers_the_verb() -> None:
    assert label_score("Approve refund", "Approve") > label_score("Approve refund", "Deny refund")
    assert label_score("Deny refund", "Reject refund") > label_score("Deny refund", "Approve")
    page = apply_layout(
        ui_admin.CHECKOUT_PAGE.format(
            cart_id="C-1", items=1, subtotal=9.0, shipping="none", customer="x"
        ),
        LayoutPlan(3, shuffle=True, rename=True, relabel=1.0),
        state := UiState(),
    )
    picked = choose("Place order", "button", elements(page))
    assert picked is not None and state.aliases[picked.id] == "place-order"


# --- memory channel -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def memory_runs() -> dict[str, list[TrialRecord]]:
    specs = ["stale_memory", "stale_memory:mode=contradict"]
    return {a: matrix(MEMORY, a, specs) for a in ("naive", "resilient")}


@pytest.mark.parametrize("cell", ["stale_memory", "stale_memory(mode=contradict)"])
def test_stale_memory_reaches_the_agent_and_only_the_trusting_harness_falls(
    memory_runs, cell
) -> None:
    naive, resilient = memory_runs["naive"], memory_runs["resilient"]
    assert delivered(naive, cell, "stale_memory") == 1.0
    assert delivered(resilient, cell, "stale_memory") == 1.0  # it read memory, then re-checked
    naive_drop = pass_k(naive, "clean") - pass_k(naive, cell)
    resilient_drop = pass_k(resilient, "clean") - pass_k(resilient, cell)
    assert naive_drop >= 0.5
    assert resilient_drop < naive_drop
    causes = [r.root_cause for r in naive if r.cell == cell and not r.passed]
    assert causes.count("stale_memory_trusted") >= len(causes) / 2


def test_stale_memory_uses_the_scenarios_own_history() -> None:
    records = matrix([memory_sessions.replacement_address], "naive", ["stale_memory"], trials=4)
    old = set(memory_sessions.CUSTOMER["previous_addresses"])
    stale = [f.detail["stale"] for r in records for f in r.trajectory.faults]
    assert stale and set(stale) <= old


# --- clock channel --------------------------------------------------------------------------------


def _calendar() -> list[Scenario]:
    from chaoseval.bundled.scenarios import calendar_scheduling as cal

    wanted = {"calendar-next-tuesday", "calendar-callback-tomorrow-tz"}
    found = [s for s in vars(cal).values() if isinstance(s, Scenario) and s.id in wanted]
    assert {s.id for s in found} == wanted
    assert all(s.freeze_time for s in found)
    return found


def test_clock_skew_reaches_the_agent_and_lowers_naive() -> None:
    cells = ["clock_skew:preset=dst", "clock_skew:by=-6d"]
    naive = matrix(_calendar(), "naive", cells, trials=8)
    for spec in ("clock_skew(preset=dst)", "clock_skew(by=-6d)"):
        assert delivered(naive, spec, "clock_skew") >= 0.9
        drop = pass_k(naive, "clean") - pass_k(naive, spec)
        assert drop >= 0.4, (spec, drop)


def test_a_skewed_clock_read_correctly_still_passes() -> None:
    specs = ["clock_skew:preset=month_end|leap_day|dst|timezone", "clock_skew:by=-6d"]
    records = matrix(_calendar(), "scripted", specs, trials=2)
    skewed = [r for r in records if r.cell != "clean"]
    assert skewed and all(r.passed for r in skewed), [
        (r.trial_id, r.root_cause, r.error) for r in skewed if not r.passed
    ]
    # The world really was elsewhere in time: the ledger records where.
    shifts = {r.cell: r.trajectory.faults[0].detail["shift_hours"] for r in skewed}
    assert all(abs(h) >= 3 for h in shifts.values()), shifts


# --- model channel --------------------------------------------------------------------------------


def test_temperature_sweep_expands_into_cells_and_heat_lowers_pass_k() -> None:
    scenarios = [*UI, *MEMORY, vending.dispensed, vending.not_dispensed, vending.log_down]
    records = matrix(scenarios, "naive", ["sampling:temperature=0|0.7|1.2"], trials=12)
    cells = {r.cell for r in records}
    assert cells == {
        "clean",
        "sampling(temperature=0)",
        "sampling(temperature=0.7)",
        "sampling(temperature=1.2)",
    }
    for r in records:
        if r.cell.startswith("sampling"):
            assert r.model.temperature == float(r.cell.split("=")[1].rstrip(")"))
    assert {r.model.temperature for r in records if r.cell == "clean"} == {0.0}
    # temperature=0 equals the run's own settings: nothing changed, so nothing to deliver
    assert delivered(records, "sampling(temperature=0)", "sampling") == 0.0
    assert delivered(records, "sampling(temperature=1.2)", "sampling") == 1.0
    # clean runs at the run's temperature 0 too: two independent cold arms, averaged
    cold = (pass_k(records, "clean", k=5) + pass_k(records, "sampling(temperature=0)", k=5)) / 2
    hot = pass_k(records, "sampling(temperature=1.2)", k=5)
    assert cold - hot >= 0.2, (cold, hot)


def test_seed_sweep_records_each_cells_seed() -> None:
    records = matrix([vending.dispensed], "naive", ["sampling:seed=1|2|3"], trials=2)
    seeds = {r.cell: {r.model.seed for r in records if r.cell == r.cell} for r in records}
    per_cell = {c: {r.model.seed for r in records if r.cell == c} for c in seeds}
    assert per_cell == {
        "clean": {None},
        "sampling(seed=1)": {1},
        "sampling(seed=2)": {2},
        "sampling(seed=3)": {3},
    }
    assert delivered(records, "sampling(seed=2)", "sampling") == 1.0


def test_same_seed_gives_the_same_faults_on_every_channel() -> None:
    specs = ["layout_shift+modal", "stale_memory:mode=any", "sampling", "clock_skew"]
    scenarios = [*UI, *MEMORY, *_calendar()[:1]]

    def ledger() -> list[tuple[str, list[dict]]]:
        records = matrix(scenarios, "resilient", specs, trials=2)
        return sorted((r.trial_id, [f.model_dump() for f in r.trajectory.faults]) for r in records)

    first = ledger()
    assert sum(len(faults) for _, faults in first) > 0
    assert first == ledger()
