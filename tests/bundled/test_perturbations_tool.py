"""Tool-channel perturbations on small matrices: each one lands, and each one costs pass^k.

Everything asserted here is measured from a run: the fault ledger in the trajectories, and the
pass^k of each cell against the clean baseline of the same run.
"""

from __future__ import annotations

from functools import cache

import pytest

from chaoseval.analysis.aggregate import CellResult, by_cell
from chaoseval.bundled.perturbations.malformed import MALFORMED_MODES
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings
from chaoseval.seams.agent import load_agent

SCENARIOS = ["vending-refund-not-dispensed", "vending-refund-dispensed"]
K = 3
TRIALS = 8
CELLS = {
    "latency": "latency:mean=3",
    "timeout": "timeout",
    "timeout-http": "timeout:modes=[429,5xx,reset]",
    "malformed": "malformed",
}


@cache
def matrix(agent: str) -> dict[str, CellResult]:
    result = run(
        RunConfig(
            scenarios=select(installed(), SCENARIOS),
            agent=load_agent(agent),
            agent_name=agent,
            cells=parse_cells(list(CELLS.values())),
            trials=TRIALS,
            seed=11,
            model=ModelSettings(temperature=0.0),
            ks=(1, K),
            journal=None,
        )
    )
    cells = {c.cell: c for c in by_cell(result.records, (1, K))}
    label = {key: parse_cells([text])[0].name for key, text in CELLS.items()}
    return {"clean": cells["clean"], **{key: cells[name] for key, name in label.items()}}


def drop(agent: str, cell: str) -> float:
    cells = matrix(agent)
    return cells[cell].summary.pass_hat[K] - cells["clean"].summary.pass_hat[K]


@pytest.mark.parametrize("agent", ["naive", "resilient"])
def test_clean_baseline_is_near_perfect(agent: str) -> None:
    clean = matrix(agent)["clean"]
    assert clean.faults_injected == 0
    assert clean.summary.pass_hat[K] >= 0.9


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("agent", ["naive", "resilient"])
def test_faults_reach_the_agent(agent: str, cell: str) -> None:
    result = matrix(agent)[cell]
    assert result.faults_delivered > 0
    assert not result.did_not_land
    assert result.not_evaluable == 0


@pytest.mark.parametrize("cell", list(CELLS))
def test_naive_loses_pass_hat_k(cell: str) -> None:
    assert drop("naive", cell) <= -0.3


@pytest.mark.parametrize("cell", ["timeout", "timeout-http", "malformed"])
def test_resilient_degrades_less_than_naive(cell: str) -> None:
    assert drop("resilient", cell) > drop("naive", cell)


def test_root_causes_name_the_fault() -> None:
    naive = matrix("naive")
    assert naive["timeout"].root_causes["timeout"] > 0
    assert naive["timeout-http"].root_causes["unhandled_tool_error"] > 0
    assert naive["malformed"].root_causes["accepted_malformed_data"] > 0
    # the resilient harness retries what naive lets end the episode
    assert matrix("resilient")["timeout-http"].root_causes["unhandled_tool_error"] == 0


def test_malformed_faults_record_their_mode() -> None:
    result = run(
        RunConfig(
            scenarios=select(installed(), SCENARIOS[:1]),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(["malformed:probability=1"]),
            trials=6,
            seed=5,
            model=ModelSettings(temperature=0.0),
            journal=None,
        )
    )
    faults = [f for r in result.records for f in r.trajectory.faults]
    assert faults and all(f.kind == "malformed" for f in faults)
    assert {f.detail["mode"] for f in faults} <= set(MALFORMED_MODES)
    assert len({f.detail["mode"] for f in faults}) >= 3
