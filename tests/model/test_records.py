"""The typed payloads of the journal: what they accept, and that they write what they read."""

from __future__ import annotations

import json
from datetime import date

import pytest
from pydantic import ValidationError

from chaoseval.model.cells import cell_name, parse_cells
from chaoseval.model.records import CLEAN, Budgets, CheckResult, ScenarioInfo
from chaoseval.model.trajectory import (
    AnswerData,
    Fault,
    ModelCallData,
    NoData,
    Step,
    Trajectory,
)


def test_scenario_info_writes_back_only_the_fields_it_was_given() -> None:
    # An importer knows id, domain and tags; a run knows everything. Each journal line must
    # read and re-write unchanged, so defaults are not invented on the way out.
    imported = {"id": "t1", "domain": "tau-bench", "tags": ["tau-bench"]}
    assert json.loads(ScenarioInfo.model_validate(imported).model_dump_json()) == imported
    full = ScenarioInfo(
        id="s", domain="d", tags=[], source=None, tools={"a": "1"}, budgets=Budgets()
    )
    assert list(json.loads(full.model_dump_json())) == [
        "id", "domain", "tags", "source", "tools", "budgets",
    ]  # fmt: skip
    assert ScenarioInfo.model_validate_json(full.model_dump_json()) == full


def test_step_data_is_the_model_of_its_kind() -> None:
    traj = Trajectory()
    traj.add_step("model", data=ModelCallData(input_tokens=3, output_tokens=4, cost=0.5))
    traj.add_step("tool", tool="t", args={})
    traj.add_step("answer", data=AnswerData(gave_up=True))
    back = Trajectory.model_validate_json(traj.model_dump_json())
    assert [type(s.data) for s in back.steps] == [ModelCallData, NoData, AnswerData]
    assert json.loads(traj.model_dump_json())["steps"][1]["data"] == {}
    assert [s.gave_up for s in back.steps] == [False, False, True]
    with pytest.raises(ValidationError):
        Step(index=0, kind="answer", data={"gave_up": True, "unknown": 1})


def test_fault_detail_holds_what_the_journal_will() -> None:
    fault = Fault(
        perturbation="p", channel="memory", kind="k", detail={"on": date(2026, 3, 1), "ids": (1, 2)}
    )
    assert fault.detail == {"on": "2026-03-01", "ids": [1, 2]}
    assert Fault.model_validate_json(fault.model_dump_json()) == fault


def test_check_results_and_the_clean_cell() -> None:
    assert CheckResult(name="n", passed=False).detail == ""
    assert cell_name([]) == CLEAN
    assert [c.name for c in parse_cells(["latency"])] == ["latency"]
