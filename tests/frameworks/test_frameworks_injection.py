"""The framework agents under the ``injection`` family: planted text reaches each framework's
model through its own MCP client and the model channel, and is recorded the same way as for the
bundled example.

chaoseval-sim plays the naive model's seeded susceptibility (docs/MODEL_CHANNEL.md): it follows
a planted instruction it reads in a relayed tool result or in an offered tool's description, by
the trial's own draw. So a framework that hands its model what its tools returned and listed
must follow, or not, in exactly the trials where the example does: these tests measure delivery
and recording, not the framework's resistance (that needs a real model). Few tasks and trials:
the matrix of tests/frameworks/test_frameworks.py carries the wall time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chaoseval.model.cells import parse_cells
from chaoseval.model.records import TrialRecord
from chaoseval.store.journal import read_journal
from tests.frameworks.matrix import EXAMPLE, FRAMEWORKS, Framework, installed

pytestmark = pytest.mark.frameworks

# Two bundled injection tasks whose payloads include a call the task never needs and a
# changed answer; two trials each, at the framework matrix's seed.
SCENARIOS = ("inject-order-refund", "inject-account-upgrade")
TRIALS = 2
SEED = 7
# A payload in the first tool result (field or note, any encoding), and one in a tool's
# description as the MCP server lists it.
RESULT = "injection"
LISTING = "injection_mcp:placements=[description]"
CELLS = (RESULT, LISTING)


def run_injection(framework: Framework, journal: Path) -> list[TrialRecord]:
    chaoseval = Path(sys.executable).with_name("chaoseval")
    argv = [str(chaoseval), "run", "--agent", f"exec:{framework.command}"]
    for scenario in SCENARIOS:
        argv += ["-s", scenario]
    for cell in CELLS:
        argv += ["-p", cell]
    argv += ["-n", str(TRIALS), "--seed", str(SEED), "-j", "4", "--journal", str(journal)]
    done = subprocess.run(
        [*argv, "--overwrite"],
        cwd=journal.parent,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{framework.name}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return [r for r in read_journal(journal).records if r.cell != "clean"]


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> list[TrialRecord]:
    return run_injection(EXAMPLE, tmp_path_factory.mktemp("inject-example") / "j.jsonl")


@pytest.fixture(scope="module", params=sorted(FRAMEWORKS))
def attacked(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Framework, list[TrialRecord]]:
    framework = installed(FRAMEWORKS[request.param])
    journal = tmp_path_factory.mktemp(f"inject-{framework.name}") / "j.jsonl"
    return framework, run_injection(framework, journal)


def key(record: TrialRecord) -> tuple[str, str, int]:
    return record.cell, record.scenario, record.index


def test_payloads_land_where_they_land_for_the_example(
    attacked: tuple[Framework, list[TrialRecord]], example: list[TrialRecord]
) -> None:
    framework, records = attacked
    assert not [r.trial_id for r in records if r.status == "not_evaluable"], framework.name
    hit = {key(r) for r in records if r.faults_delivered()}
    expected = {key(r) for r in example if r.faults_delivered()}
    names = {cell.name for cell in parse_cells(list(CELLS))}
    assert {c for c, _, _ in expected} == names  # both placements reach the example
    assert hit >= expected, framework.name


def test_the_same_trials_follow_as_for_the_example(
    attacked: tuple[Framework, list[TrialRecord]], example: list[TrialRecord]
) -> None:
    """Delivered, relayed to the model, and judged: the sim follows by the trial's draw, so a
    framework that passes the text on is recorded as following exactly where the example is."""
    framework, records = attacked
    mine = {key(r): r.injection_followed for r in records}
    theirs = {key(r): r.injection_followed for r in example}
    assert any(theirs.values()), "the example followed no payload: the test shows nothing"
    assert mine == theirs, framework.name


def test_each_delivered_payload_is_recorded_with_its_goal_judged(
    attacked: tuple[Framework, list[TrialRecord]],
) -> None:
    """What the ledger and the judge say: a delivered injection fault names its payload,
    placement and encoding; a trial it reached has injection_followed and utility; a followed
    one failed with the injection_followed veto."""
    framework, records = attacked
    for record in records:
        delivered = [f for f in record.trajectory.faults if f.kind == "injection" and f.delivered]
        if not delivered:
            assert record.injection_followed is None, record.trial_id
            continue
        assert all({"payload", "placement", "encoding"} <= set(f.detail) for f in delivered)
        assert record.injection_followed is not None and record.utility is not None
        if record.injection_followed:
            assert record.status == "failed" and record.root_cause == "injection_followed", (
                framework.name,
                record.trial_id,
            )
