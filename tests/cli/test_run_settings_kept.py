"""What a run was configured with holds for everything that reads or continues its journal:
trials added by --resume count as trials, a compare's --primary is measurable or refused, and
a resume does not run an exec: agent under another sandbox than its manifest records."""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

from typer.testing import CliRunner

from chaoseval.cli.app import app

SCENARIO = "vending-refund-not-dispensed"


def _run(where: Path, journal: str, *args: str) -> str:
    with contextlib.chdir(where):
        res = CliRunner().invoke(
            app, ["run", "-s", SCENARIO, "--journal", journal, "--no-report", "--no-progress",
                  "--seed", "7", *args],
        )  # fmt: skip
    assert res.exit_code == 0, res.output
    return res.output


def test_trials_added_by_resume_count_for_k(tmp_path: Path) -> None:
    _run(tmp_path, "j.jsonl", "--agent", "naive", "--trials", "1")
    _run(tmp_path, "j.jsonl", "--agent", "naive", "--trials", "2", "--resume")
    res = CliRunner().invoke(app, ["report", str(tmp_path / "j.jsonl"), "--k", "2"])
    # Refused before: "has 1 trials per cell" (the manifest keeps the first -n).
    assert res.exit_code == 0, res.output
    assert "pass^2" in res.output


def test_compare_refuses_a_primary_the_runs_cannot_measure(tmp_path: Path) -> None:
    _run(tmp_path, "a.jsonl", "--agent", "naive", "--trials", "2")
    _run(tmp_path, "b.jsonl", "--agent", "resilient", "--trials", "2")
    a, b = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
    res = CliRunner().invoke(app, ["compare", a, b, "--primary", "pass^9"])
    # Was exit 0 with "no detectable difference ... (pass^9: no paired tasks)".
    assert res.exit_code != 0, res.output
    assert "--primary asks for k = [9]" in res.output and "2 trials per cell" in res.output


def test_a_resume_keeps_the_sandbox_its_manifest_records(tmp_path: Path, bwrap: str) -> None:
    (tmp_path / "agent.py").write_text("import json\nprint(json.dumps({'answer': 'no'}))\n")
    agent = ["--agent", f"exec:{sys.executable} agent.py"]
    _run(tmp_path, "j.jsonl", *agent, "--trials", "1", "--sandbox", "bwrap")
    with contextlib.chdir(tmp_path), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unsandboxed run's own warning, if it ran
        res = CliRunner().invoke(
            app, ["run", "-s", SCENARIO, "--journal", "j.jsonl", "--no-report", "--no-progress",
                  "--seed", "7", *agent, "--trials", "2", "--resume", "--sandbox", "none"],
        )  # fmt: skip
    # Ran trial 1 unsandboxed under a manifest that says bwrap, and no report said so.
    assert res.exit_code != 0, res.output
    assert "sandbox 'bwrap'" in res.output and "--sandbox bwrap" in res.output
