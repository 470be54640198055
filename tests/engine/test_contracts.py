"""Degradation contracts: a trial hit by a fault the scenario's contract names passes by
recovering (its normal checks) or by degrading as the contract declares; both are recorded."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ToolTimeout
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import TrialRecord
from chaoseval.model.scenario import Check, DegradationContract
from chaoseval.seams.agent import AgentAdapter, AgentOutput, Episode, load_agent
from tests.conftest import make_scenario

LOG_HANG = "timeout:probability=1,modes=[hang],tools=read_dispense_log"


class BlindRefunder:
    """Refunds when the dispense log does not answer: what R3 forbids."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        order = await episode.tools.call("lookup_order", order_id=episode.task["order_id"])
        try:
            await episode.tools.call(
                "read_dispense_log", machine_id=order["machine_id"], order_id=order["order_id"]
            )
        except ToolTimeout:
            pass
        await episode.tools.call(
            "issue_refund", order_id=order["order_id"], amount=order["amount"], clause="R1"
        )
        return AgentOutput(answer=f"Refunded {order['order_id']} (R1).")


class Quitter:
    """Crashes when the log does not answer."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        order = await episode.tools.call("lookup_order", order_id=episode.task["order_id"])
        await episode.tools.call(
            "read_dispense_log", machine_id=order["machine_id"], order_id=order["order_id"]
        )
        raise AssertionError("the log answered: this test expects it to hang")


def _records(
    agent: AgentAdapter, cell: str = LOG_HANG, scenario: str = "vending-refund-not-dispensed"
) -> dict[str, TrialRecord]:
    result = run(
        RunConfig(
            scenarios=select(installed(), [scenario]),
            agent=agent,
            agent_name=type(agent).__name__,
            cells=parse_cells([cell]),
            trials=1,
            references=False,
        )
    )
    return {r.cell: r for r in result.records}


def test_an_escalation_under_a_log_timeout_passes_by_the_contract():
    by_cell = _records(load_agent("scripted"))
    clean, hung = by_cell["clean"], next(r for c, r in by_cell.items() if c != "clean")
    assert clean.status == "passed" and clean.contracts == []
    assert hung.status == "passed" and hung.root_cause is None
    # Both verdicts are recorded: the normal check failed, the contract held.
    assert not next(c for c in hung.checks if c.name == "refunded in full").passed
    (contract,) = hung.contracts
    assert contract.held and contract.name == "dispense log unavailable: escalate"
    assert [c.name for c in contract.checks if c.passed] == [
        "no refund issued", "ticket opened", "customer told it is escalated"
    ]  # fmt: skip


def test_a_blind_refund_under_a_log_timeout_breaks_the_contract():
    # Where the product did drop, refunding without the log is wrong both ways.
    by_cell = _records(BlindRefunder(), scenario="vending-refund-dispensed")
    hung = next(r for c, r in by_cell.items() if c != "clean")
    assert hung.status == "failed" and hung.root_cause == "wrong_final_state"
    (contract,) = hung.contracts
    assert not contract.held
    assert not next(c for c in contract.checks if c.name == "no refund issued").passed


def test_a_crash_after_the_fault_counts_against_the_contract():
    hung = next(r for c, r in _records(Quitter()).items() if c != "clean")
    assert (hung.status, hung.root_cause) == ("failed", "timeout")
    assert [(c.held, c.checks) for c in hung.contracts] == [(False, [])]


def test_a_fault_the_contract_does_not_name_is_judged_as_before():
    # The contract covers the log tool; a timeout on lookup_order leaves it out.
    other = "timeout:probability=1,modes=[hang],tools=lookup_order"
    hung = next(r for c, r in _records(load_agent("scripted"), other).items() if c != "clean")
    assert hung.status == "failed" and hung.contracts == []


def _contract(**kw: Any) -> DegradationContract:
    check = Check(name="x", fn=lambda w, o, t: True)
    return DegradationContract(**{"name": "c", "checks": [check], **kw})


def test_a_contract_says_what_it_covers_and_names_real_tools():
    with pytest.raises(ValidationError, match="names neither tools nor faults"):
        _contract()
    with pytest.raises(ValidationError, match=r"names tools the scenario lacks: \['nope'\]"):
        make_scenario(contracts=[_contract(tools=["nope"])])
    assert make_scenario(contracts=[_contract(faults=["timeout"])]).contracts
