"""The matrix runner and its journal: reproducible, resumable, honest about damage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ConfigError, JournalError
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import read_journal

VOLATILE = {"run_id", "started_at", "wall_seconds"}


def _config(journal: Path | None, seed: int = 3, agent: str = "naive", **kw) -> RunConfig:
    return RunConfig(
        scenarios=select(installed(), ["vending-*"]),
        agent=load_agent(agent),
        agent_name=agent,
        cells=parse_cells(["latency", "timeout"]),
        trials=4,
        seed=seed,
        journal=journal,
        **kw,
    )


def _stable(path: Path) -> list[dict]:
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    trials = [x for x in lines if x["type"] == "trial"]
    for t in trials:
        for key in VOLATILE:
            t.pop(key)
    return sorted(trials, key=lambda t: t["trial_id"])


def test_same_seed_gives_identical_journals(tmp_path):
    run(_config(tmp_path / "a.jsonl"))
    run(_config(tmp_path / "b.jsonl", concurrency=1))
    a, b = _stable(tmp_path / "a.jsonl"), _stable(tmp_path / "b.jsonl")
    assert len(a) == 3 * 3 * 4
    assert a == b


def test_different_seed_changes_outcomes(tmp_path):
    run(_config(tmp_path / "a.jsonl", seed=3))
    run(_config(tmp_path / "b.jsonl", seed=4))
    a = [(t["trial_id"], t["status"], t["steps"]) for t in _stable(tmp_path / "a.jsonl")]
    b = [(t["trial_id"], t["status"], t["steps"]) for t in _stable(tmp_path / "b.jsonl")]
    assert a != b


def test_manifest_records_what_reproduces_the_run(tmp_path):
    run(_config(tmp_path / "a.jsonl"))
    j = read_journal(tmp_path / "a.jsonl")
    m = j.manifest
    assert m.seed == 3 and m.agent == "naive" and m.clock == "virtual"
    assert [c.name for c in m.cells] == ["clean", "latency", "timeout"]
    assert {s.id for s in m.scenarios} == {r.scenario for r in j.records}
    assert m.packages["anyio"] != "unknown"
    assert all(r.seed and r.world_seed for r in j.records)


def test_manifest_records_each_scenarios_reference_run(tmp_path):
    """What the report needs from the reference solutions is recorded when the run starts."""
    config = _config(tmp_path / "a.jsonl")
    run(config)
    refs = read_journal(tmp_path / "a.jsonl").manifest.references
    assert refs is not None and set(refs) == {s.id for s in config.scenarios}
    for s in config.scenarios:
        ref = refs[s.id]
        assert ref.passed and ref.error is None and ref.steps == s.reference_steps
        assert ref.calls and all(c.tool in {t.name for t in s.tools} for c in ref.calls)
    run(_config(tmp_path / "b.jsonl", references=False))
    assert read_journal(tmp_path / "b.jsonl").manifest.references is None


def test_schema_1_journals_without_references_stay_readable(tmp_path):
    path = tmp_path / "a.jsonl"
    run(_config(path, references=False))
    lines = path.read_text().splitlines()
    manifest = json.loads(lines[0])
    manifest.pop("references")
    lines = [json.dumps({**manifest, "schema_version": 1})] + [
        json.dumps({**json.loads(x), "schema_version": 1}) for x in lines[1:]
    ]
    path.write_text("\n".join(lines) + "\n")
    j = read_journal(path)
    assert j.manifest.references is None and len(j.records) == 3 * 3 * 4


def test_existing_journal_is_not_overwritten_silently(tmp_path):
    path = tmp_path / "a.jsonl"
    run(_config(path))
    with pytest.raises(ConfigError, match="--resume"):
        run(_config(path))


def test_interrupted_journal_resumes_without_losing_records(tmp_path):
    path = tmp_path / "a.jsonl"
    run(_config(path))
    full = _stable(path)
    lines = path.read_text().splitlines(keepends=True)
    # Keep the manifest and 10 trials, then half of the 11th line: an interrupted write.
    path.write_text("".join(lines[:11]) + lines[11][: len(lines[11]) // 2])
    j = read_journal(path)
    assert len(j.records) == 10
    assert j.cut_off_line == 12
    assert "cut off" in j.warnings[0] and "--resume" in j.warnings[0]

    result = run(_config(path, resume=True))
    assert result.resumed == 10
    assert (tmp_path / "a.jsonl.d" / ".partial").exists()  # the torn line is kept aside
    assert _stable(path) == full


def test_resume_refuses_a_different_configuration_naming_what_differs(tmp_path):
    """Only what differs is named, with both values (before, every field that might differ
    was listed whatever had changed)."""
    path = tmp_path / "a.jsonl"
    run(_config(path))
    with pytest.raises(ConfigError, match="different run configuration") as seed:
        run(_config(path, seed=99, resume=True))
    assert "--seed: the journal has 3, this run 99" in str(seed.value)
    assert "--agent" not in str(seed.value) and "-p" not in str(seed.value)
    changed = _config(path, resume=True)
    changed.cells = parse_cells(["latency", "malformed"])
    with pytest.raises(ConfigError) as cells:
        run(changed)
    said = str(cells.value)
    assert "the cells (-p): only the journal has" in said and "timeout" in said
    assert "only this run has" in said and "malformed" in said and "--seed" not in said


def test_corrupt_line_in_the_middle_names_the_line(tmp_path):
    path = tmp_path / "a.jsonl"
    run(_config(path))
    lines = path.read_text().splitlines(keepends=True)
    lines[5] = "{not json\n"
    path.write_text("".join(lines))
    with pytest.raises(JournalError, match=r"a\.jsonl:6: not valid JSON"):
        read_journal(path)


def test_missing_journal_says_how_to_make_one(tmp_path):
    with pytest.raises(JournalError, match="chaoseval run --journal"):
        read_journal(tmp_path / "nope.jsonl")


def test_sweeps_and_stacks_expand_into_named_cells():
    cells = parse_cells(["latency:mean=0.5|2|8", "latency:mean=2+timeout:probability=1"])
    assert [c.name for c in cells] == [
        "latency(mean=0.5)",
        "latency(mean=2)",
        "latency(mean=8)",
        "latency(mean=2)+timeout(probability=1)",
    ]
    assert [s.name for s in cells[-1].perturbations] == ["latency", "timeout"]


def test_generated_world_does_not_depend_on_the_day_it_is_built():
    from freezegun import freeze_time

    scenario = select(installed(), ["vending-refund-not-dispensed"])[0]
    with freeze_time("2026-01-01"):
        a = scenario.build(123)
    with freeze_time("2031-07-19 23:59:59"):
        b = scenario.build(123)
    assert a == b
    assert scenario.build(124) != a


def test_cells_share_trial_seeds_and_unreached_tasks_are_left_out():
    """Common random numbers: a cell whose faults reach no task behaves exactly like clean,
    and a task the perturbation never reached is listed as not landed, not 'survived'."""
    from chaoseval.analysis.aggregate import by_cell

    config = _config(None)
    config.cells = parse_cells(["timeout:tools=no_such_tool", "timeout:tools=read_dispense_log"])
    records = run(config).records
    clean = {(r.scenario, r.index): r for r in records if r.cell == "clean"}
    for r in records:
        assert r.seed == clean[(r.scenario, r.index)].seed
    unreached = [r for r in records if r.cell == "timeout(tools=no_such_tool)"]
    assert [r.status for r in unreached] == [clean[(r.scenario, r.index)].status for r in unreached]

    cells = {c.cell: c for c in by_cell(records, [1, 2])}
    nowhere = cells["timeout(tools=no_such_tool)"]
    assert nowhere.did_not_land and nowhere.summary.mean is None
    assert len(nowhere.not_landed) == 3
    log = cells["timeout(tools=read_dispense_log)"]
    # read_dispense_log is called in every vending scenario, so it lands on all three.
    assert log.not_landed == [] and log.summary.tasks == 3
