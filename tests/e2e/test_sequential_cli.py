"""``chaoseval run --sequential`` as a user runs it (issue 44): the settings file turns it on,
run prints each cell's decision, and report and gate read the same decisions from the journal;
a fixed run's report is unchanged by it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app

runner = CliRunner()
ENV = {"COLUMNS": "250", "NO_COLOR": "1"}
SETTINGS = """\
agent = "naive"
sequential = true
trials = 2
round_size = 2
max_trials_per_task = 6
seed = 7
perturbations = ["timeout", "sampling"]
scenarios = ["orders-*"]
"""


def _run(tmp_path: Path, *extra: str) -> tuple[Path, str]:
    (tmp_path / "chaoseval.toml").write_text(SETTINGS, encoding="utf-8")
    journal = tmp_path / "s.jsonl"
    res = runner.invoke(
        app,
        [
            "run", "--config", str(tmp_path / "chaoseval.toml"), "--journal", str(journal),
            "--no-progress", "-q", *extra,
        ],
        env=ENV,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    return journal, res.output


def test_settings_turn_it_on_and_report_and_gate_read_the_decisions(tmp_path: Path) -> None:
    journal, out = _run(tmp_path)
    assert "timeout" in out and "broken in round 2 after 4 trial(s) per task" in out
    manifest = json.loads(journal.read_text().splitlines()[0])
    assert manifest["sequential"]["first"] == 2 and manifest["trials"] == 6
    report = runner.invoke(app, ["report", str(journal), "-f", "json"], env=ENV)
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    text = json.dumps(data)
    assert "a sequential run (run --sequential)" in text  # the report says what it shows
    gate = runner.invoke(app, ["gate", str(journal)], env=ENV)
    assert gate.exit_code == 1, gate.output  # timeout broke the naive agent
    assert "broken on" in gate.output and "sequential, round 3: the cap of 6" in gate.output


def test_pass_k_past_the_first_round_is_refused(tmp_path: Path) -> None:
    """pass^k comes from each task's first-round trials: k above -n is refused by report."""
    journal, _ = _run(tmp_path)
    res = runner.invoke(app, ["report", str(journal), "--k", "4"], env=ENV)
    assert res.exit_code == 2
    assert "2 trials per cell" in res.output


def test_alpha_is_recorded_and_decides(tmp_path: Path) -> None:
    """--alpha is the run's family-wise error rate: recorded in the manifest's design, said in
    the report, and what the decisions are made at (the settings' alpha when no flag)."""
    journal, out = _run(tmp_path, "--alpha", "0.000001")
    manifest = json.loads(journal.read_text().splitlines()[0])
    assert manifest["sequential"]["alpha"] == 0.000001
    # The same trials that decide timeout at 0.05 in round 2 do not at one in a million.
    assert "timeout" in out and "broken in round" not in out
    assert "at alpha 1e-06" in out
    report = runner.invoke(app, ["report", str(journal), "-f", "json"], env=ENV)
    assert "closed testing by cell at alpha 1e-06" in report.output
    (tmp_path / "chaoseval.toml").write_text(SETTINGS + "alpha = 0.2\n", encoding="utf-8")
    res = runner.invoke(
        app,
        [
            "run", "--config", str(tmp_path / "chaoseval.toml"), "--journal",
            str(tmp_path / "file.jsonl"), "--no-progress", "-q",
        ],
        env=ENV,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (
        json.loads((tmp_path / "file.jsonl").read_text().splitlines()[0])["sequential"]["alpha"]
        == 0.2
    )


@pytest.mark.parametrize("bad", [["--margin", "1.5"], ["-n", "9"], ["--alpha", "1"]])
def test_a_bad_design_is_refused_before_any_trial(tmp_path: Path, bad: list[str]) -> None:
    (tmp_path / "chaoseval.toml").write_text(SETTINGS, encoding="utf-8")
    journal = tmp_path / "bad.jsonl"
    res = runner.invoke(
        app,
        ["run", "--config", str(tmp_path / "chaoseval.toml"), "--journal", str(journal), *bad],
        env=ENV,
    )
    assert res.exit_code == 2, res.output
    assert not journal.exists()


@pytest.mark.parametrize("given", [["--alpha", "0.01"], ["--margin", "0.2", "--round-size", "3"]])
def test_a_sequential_option_on_a_fixed_run_is_refused(tmp_path: Path, given: list[str]) -> None:
    """--fixed with --alpha would run n trials and control nothing: said before any trial,
    naming the options and the two ways out."""
    (tmp_path / "chaoseval.toml").write_text(SETTINGS, encoding="utf-8")
    journal = tmp_path / "fixed.jsonl"
    res = runner.invoke(
        app,
        ["run", "--config", str(tmp_path / "chaoseval.toml"), "--journal", str(journal),
         "--fixed", *given],
        env=ENV,
    )  # fmt: skip
    assert res.exit_code == 2, res.output
    assert all(g in res.output for g in given if g.startswith("--"))
    assert "add --sequential" in res.output and not journal.exists()


def test_compare_reads_first_rounds_and_lists_each_runs_decisions(tmp_path: Path) -> None:
    """compare pairs two sequential journals on each task's first-round trials (as many in
    every cell and both runs), says so, and lists each run's own decisions beside it."""
    a, _ = _run(tmp_path)
    b = tmp_path / "b.jsonl"
    res = runner.invoke(
        app,
        [
            "run", "--config", str(tmp_path / "chaoseval.toml"), "--journal", str(b),
            "--agent", "resilient", "--no-progress", "-q",
        ],
        env=ENV,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = runner.invoke(app, ["compare", str(a), str(b), "-f", "json", "--resamples", "200"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    tasks = 6  # orders-*
    for cell in ("clean", "timeout", "sampling"):
        # 2 first-round trials a task, though the runs went on to 6 in some cells
        assert doc["statuses"][cell]["passed_a"][1] == 2 * tasks
        assert doc["statuses"][cell]["passed_b"][1] == 2 * tasks
    assert doc["sequential_decisions"]["timeout"]["a"] == "broken"
    assert set(doc["sequential_decisions"]) == {"timeout", "sampling"}
    assert any(
        "is a sequential run: compared on each task's first-round" in w for w in doc["warnings"]
    )
    table = runner.invoke(app, ["compare", str(a), str(b), "--resamples", "200"], env=ENV)
    assert table.exit_code == 0, table.output
    assert "sequential decisions, each run against its own clean" in table.output
    assert "timeout" in table.output.split("sequential decisions")[1]


def test_allocate_is_recorded_and_report_and_gate_replay_it(tmp_path: Path) -> None:
    """--allocate: the design records the rate and the run seed, and report and gate decide
    from the journal as the run did; a rate outside (0, 1] is a usage error."""
    journal, _ = _run(tmp_path, "--allocate", "0.25")
    design = json.loads(journal.read_text().splitlines()[0])["sequential"]
    assert design["settled_rate"] == 0.25 and design["allocation_seed"] == 7
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    decided = [x for x in lines if x.get("type") == "manifest"][-1]["sequential"]["decided"]
    from chaoseval.analysis.sequential import statuses
    from chaoseval.store.columns import read_trials

    again = {c: s.status for c, s in statuses(read_trials(journal)).items()}
    assert again == {c: d["status"] for c, d in decided.items()}  # as the run decided
    gate = runner.invoke(app, ["gate", str(journal)], env=ENV)
    assert gate.exit_code == (1 if "broken" in again.values() else 0), gate.output
    (tmp_path / "plain").mkdir()
    plain, _ = _run(tmp_path / "plain")
    assert "settled_rate" not in plain.read_text().splitlines()[0]  # off: not recorded
    bad = runner.invoke(
        app, ["run", "--config", str(tmp_path / "chaoseval.toml"), "--journal",
              str(tmp_path / "bad.jsonl"), "--allocate", "0", "-q"], env=ENV,
    )  # fmt: skip
    assert bad.exit_code == 2 and "--allocate must lie in (0, 1]" in bad.output
