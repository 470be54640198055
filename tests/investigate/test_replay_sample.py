"""Replay reproduces recorded trials exactly; sample draws the same trials for the same seed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import JournalError
from chaoseval.investigate.replay import compare, replay, sample, to_markdown
from chaoseval.loading.files import load_paths
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import SCHEMA_VERSION
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import Journal, read_journal

VENDING = Path(__file__).resolve().parents[2] / "scenarios" / "vending.py"
CELLS = ["latency:mean=3", "timeout:tools=read_dispense_log,probability=0.5,modes=[raise,hang]"]


@pytest.fixture(scope="module")
def scenarios():
    return load_paths([VENDING])


@pytest.fixture(scope="module")
def journal(tmp_path_factory, scenarios) -> Journal:
    path = tmp_path_factory.mktemp("replay") / "run.jsonl"
    run(
        RunConfig(
            scenarios=scenarios,
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(CELLS),
            trials=3,
            seed=21,
            journal=path,
        )
    )
    return read_journal(path)


def test_replay_reproduces_every_recorded_trial(journal: Journal, scenarios) -> None:
    assert len(journal.records) == 3 * (1 + len(CELLS)) * len(scenarios)
    faulted = 0
    for record in journal.records:
        result = replay(journal, record.trial_id, scenarios)
        assert result.exact, (record.trial_id, result.differences)
        assert result.replayed.trajectory == record.trajectory
        faulted += bool(record.trajectory.faults)
    assert faulted  # faulted trials were among those reproduced, not only clean ones


def test_replay_notices_a_changed_record(journal: Journal, scenarios, tmp_path: Path) -> None:
    record = next(r for r in journal.records if len(r.trajectory.tool_steps()) >= 2)
    step = record.trajectory.tool_steps()[1]
    lines = journal.path.read_text().splitlines()
    edited = []
    for line in lines:
        data = json.loads(line)
        if data.get("trial_id") == record.trial_id:
            data["trajectory"]["steps"][step.index]["args"] = {"order_id": "ORD-0000"}
        edited.append(json.dumps(data))
    path = tmp_path / "edited.jsonl"
    path.write_text("\n".join(edited) + "\n")
    result = replay(read_journal(path), record.trial_id, scenarios)
    assert not result.exact
    assert f"step {step.index}: args differ" in result.differences


def test_replay_refuses_a_seed_that_does_not_follow(journal: Journal, scenarios) -> None:
    record = journal.records[0]
    forged = Journal(
        journal.path,
        journal.manifest.model_copy(update={"seed": journal.manifest.seed + 1}),
        journal.records,
    )
    with pytest.raises(JournalError, match="does not follow"):
        replay(forged, record.trial_id, scenarios)
    with pytest.raises(JournalError, match="did you mean"):
        replay(journal, record.trial_id + "x", scenarios)


def test_compare_ignores_wall_clock_fields_only_on_the_real_clock(journal: Journal) -> None:
    record = next(r for r in journal.records if r.trajectory.tool_steps())
    moved = record.model_copy(deep=True)
    moved.trajectory.steps[-1].t += 1.5
    moved.wall_seconds += 3
    assert compare(record, moved)  # virtual time is part of the trial
    real = record.model_copy(update={"clock": "real"})
    assert not compare(real, moved.model_copy(update={"clock": "real"}))


def test_replay_cli_side_by_side(journal: Journal) -> None:
    record = next(r for r in journal.records if r.trajectory.faults)
    result = CliRunner().invoke(
        app, ["replay", str(journal.path), record.trial_id, "--scenarios", str(VENDING)]
    )
    assert result.exit_code == 0, result.output
    assert "recorded" in result.output and "replayed" in result.output
    assert "reproduced exactly" in result.output


def test_sample_is_reproducible_and_filtered(journal: Journal) -> None:
    first = [r.trial_id for r in sample(journal, n=4, seed=5)]
    assert first == [r.trial_id for r in sample(journal, n=4, seed=5)]
    assert len(first) == 4
    assert all(journal.by_trial_id()[t].status == "passed" for t in first)
    draws = {tuple(r.trial_id for r in sample(journal, n=4, seed=s)) for s in range(6)}
    assert len(draws) > 1  # the seed matters
    failed = sample(journal, n=100, status="failed")
    assert {r.trial_id for r in failed} == {
        r.trial_id for r in journal.records if r.status == "failed"
    }


def _sample_args(journal: Journal) -> list[str]:
    return ["sample", str(journal.path), "--n", "3", "--seed", "1", "--status", "any"]


def test_sample_markdown(journal: Journal, scenarios, tmp_path: Path) -> None:
    chosen = sample(journal, n=3, seed=1, status="any")
    text = to_markdown(chosen, journal, scenarios, seed=1, status="any")
    for r in chosen:
        assert f"## {r.trial_id}" in text
        assert r.answer is None or r.answer in text
    assert "Customer" in text  # the instruction was rebuilt from the world seed
    out = tmp_path / "a.md"
    again = tmp_path / "b.md"
    for target in (out, again):
        result = CliRunner().invoke(
            app,
            [*_sample_args(journal), "-o", str(target), "--scenarios", str(VENDING)],
        )
        assert result.exit_code == 0, result.output
    assert out.read_text() == again.read_text() == text


# An exec: agent on the standard library: the model channel and HTTP tools, quick to start.
WIRE_AGENT = Path(__file__).resolve().parents[2] / "benchmarks" / "wire_agent.py"


@pytest.mark.parametrize(
    "agent",
    ["openai-naive", f"exec:{sys.executable} {WIRE_AGENT}"],
    ids=["model-channel", "exec"],
)
def test_replay_of_a_wire_trial_ignores_its_wall_clock_fields(agent: str, tmp_path: Path) -> None:
    """A model channel times its exchanges on the wall clock (latency, upstream_latency) even
    in a virtual-clock trial; an exec: agent's whole trial is on the real clock."""
    path = tmp_path / "run.jsonl"
    runner = CliRunner()
    args = ["run", "--agent", agent, "-s", "vending-refund-not-dispensed", "--trials", "1",
            "--seed", "7", "--journal", str(path), "--no-report", "--no-progress"]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    [record] = read_journal(path).records
    assert any(s.kind == "model" and s.args for s in record.trajectory.steps)  # on the wire
    result = runner.invoke(app, ["replay", str(path), record.trial_id])
    assert result.exit_code == 0, result.output
    assert "reproduced exactly" in result.output


def test_every_wall_clock_field_is_ignored_and_nothing_else(journal: Journal) -> None:
    record = next(r for r in journal.records if r.trajectory.tool_steps())
    base = record.model_copy(deep=True)
    step = base.trajectory.add_step("model", t=1.0, args={"endpoint": "chat"})
    step.result = {"status": 200, "upstream_latency": 0.25}
    step.latency = 0.5
    later = base.model_copy(deep=True)
    moved = later.trajectory.steps[-1]
    moved.latency, moved.result = 0.9, {"status": 200, "upstream_latency": 0.75}
    assert compare(base, later) == []  # wall time, on a virtual clock too
    moved.result["status"] = 429
    assert compare(base, later) == [f"step {moved.index}: result differ"]


def test_a_fingerprint_an_older_schema_took_is_left_out_of_replay(tmp_path: Path) -> None:
    """Before record schema 7 a model step's request_hash was of the body's parse, not its
    bytes: a replay today cannot repeat it, and compares the rest. A newer one it compares."""
    path = tmp_path / "run.jsonl"
    runner = CliRunner()
    args = ["run", "--agent", "openai-naive", "-s", "vending-refund-not-dispensed", "--trials",
            "1", "--seed", "7", "--journal", str(path), "--no-report", "--no-progress"]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    lines = path.read_text().splitlines()
    trial = json.loads(lines[1])
    hashed = [s for s in trial["trajectory"]["steps"] if s["kind"] == "model"]
    assert hashed and all(len(s["args"]["request_hash"]) == 16 for s in hashed)
    for s in hashed:  # as an older chaoseval would have hashed them
        s["args"]["request_hash"] = "0123456789abcdef"
    for version, verdict in ((SCHEMA_VERSION, "did not reproduce"), (6, "reproduced exactly")):
        trial["schema_version"] = version
        path.write_text("\n".join([lines[0], json.dumps(trial), *lines[2:]]) + "\n")
        result = runner.invoke(app, ["replay", str(path), trial["trial_id"]])
        assert verdict in result.output, result.output
