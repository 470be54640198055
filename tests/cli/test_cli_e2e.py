"""The CLI as a user runs it: a subprocess, real files, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
CHAOSEVAL = [sys.executable, "-m", "chaoseval"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CHAOSEVAL, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_run_then_report_json(tmp_path):
    out = cli(
        "run",
        "--agent",
        "naive",
        "-n",
        "5",
        "--seed",
        "7",
        "-s",
        "vending-*",
        "-p",
        "latency",
        "-p",
        "timeout",
        "--journal",
        "j.jsonl",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "pass^5" in out.stdout and "timeout" in out.stdout
    # stderr is a pipe here, as in CI: status lines, not a progress bar's escape codes.
    assert "chaoseval run naive: 45 trial(s) to run" in out.stderr
    assert "45/45 trials" in out.stderr and "(finished)" in out.stderr
    assert "\x1b[" not in out.stderr

    rep = cli("report", "j.jsonl", "--format", "json", cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    data = json.loads(rep.stdout)
    assert data["schema_version"] >= 1
    names = [p["name"] for p in data["perturbations"]]
    assert names == ["clean", "latency", "timeout"]
    for p in data["perturbations"]:
        assert set(p["pass_at"]) == set(p["pass_hat"]) == {"1", "2", "5"}
        assert p["trials"] == 15 and p["tasks"] == 3
        assert 0 <= p["pass_hat"]["5"] <= p["mean"] <= p["pass_at"]["5"] <= 1
    clean, _, timeout = data["perturbations"]
    assert timeout["delta_pass_hat"]["1"] == pytest.approx(
        timeout["pass_hat"]["1"] - clean["pass_hat"]["1"]
    )
    assert timeout["faults_delivered"] > 0
    assert len(data["cells"]) == 9
    assert {c["scenario"] for c in data["cells"]} >= {"vending-refund-log-down"}


def test_unknown_agent_and_bad_k_are_clear_errors(tmp_path):
    out = cli("run", "--agent", "naiv", "--journal", "j.jsonl", cwd=tmp_path)
    assert out.returncode == 2
    assert "did you mean 'naive'" in out.stderr

    out = cli(
        "run", "--agent", "naive", "-n", "2", "--k", "5", "--journal", "j.jsonl", cwd=tmp_path
    )
    assert out.returncode == 2
    assert "between 1 and --trials" in out.stderr


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path):
    # The table of bad inputs runs in process (test_cli_options.py); these two printed
    # tracebacks from a real process before.
    for args in (["report", str(tmp_path)], ["run", "--agent", "naive", "--temperature", "-1"]):
        out = cli(*args, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and out.stderr.strip()


def test_broken_scenario_file_stops_the_run_naming_file_and_field(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from chaoseval.model.scenario import Scenario\n"
        "s = Scenario(id='Bad Id', description='x', domain='d', instruction='x',\n"
        "             tools=[], checks=[], solution=None, reference_steps=0)\n"
    )
    out = cli(
        "run", "--agent", "naive", "--scenarios", str(bad), "--journal", "j.jsonl", cwd=tmp_path
    )
    assert out.returncode == 2
    assert str(bad) in out.stderr
    assert "field id" in out.stderr and "field checks" in out.stderr
    assert not (tmp_path / "j.jsonl").exists()


def test_lists(tmp_path):
    out = cli("perturbations", "list", cwd=tmp_path)
    assert out.returncode == 0 and "latency" in out.stdout and "probability" in out.stdout
    out = cli("scenarios", "list", cwd=tmp_path)
    assert out.returncode == 0 and "vending-refund-log-down" in out.stdout


def test_run_leaves_no_hypothesis_cache_in_the_working_directory(tmp_path):
    import os

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run(
        [
            *CHAOSEVAL,
            "run",
            "--agent",
            "naive",
            "-n",
            "2",
            "-s",
            "vending-*",
            "-p",
            "malformed",
            "--journal",
            "j.jsonl",
            "--no-report",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in work.iterdir()) == ["j.jsonl"]


def test_interrupted_run_keeps_its_trials_and_resumes(tmp_path):
    import signal
    import time

    args = [
        *CHAOSEVAL,
        "run",
        "--agent",
        "naive",
        # 22 tasks (1320 trials), not the whole library (4020, most of the test's time, all of
        # it in the resumed half; the calendar tasks' frozen clocks alone cost 40-160 ms a
        # trial): 20 trials a cell still take seconds, so the interrupt lands mid-run even on
        # a loaded machine (at 5 the faster runner sometimes finished first).
        "-s",
        "vending-*",
        "-s",
        "orders-*",
        "-s",
        "drift-*",
        "-n",
        "20",
        "-p",
        "latency",
        "-p",
        "timeout",
        "-j",
        "1",
        "--journal",
        "j.jsonl",
        "--no-report",
    ]
    proc = subprocess.Popen(
        args,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        # Ctrl-C as a user's terminal sends it: a test run started as a background job (no
        # job control) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    journal = tmp_path / "j.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        not journal.exists() or journal.read_text().count("\n") < 20
    ):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr
    # the status line's last word is what happened (it said "(finished)" after a Ctrl-C)
    assert "(interrupted)" in stderr and "(finished)" not in stderr, stderr
    kept = journal.read_text().count('"type":"trial"')
    assert kept >= 19

    out = cli(*args[3:], "--resume", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"resumed; {kept} kept" in out.stdout
    # Every trial once: the kept ones and the rest, none run twice (3 + 6 + 13 tasks, 3 cells).
    assert journal.read_text().count('"type":"trial"') == 22 * 3 * 20


def test_lint_shows_stale_memory_reaches_the_bundled_memory_scenarios(tmp_path):
    scenarios = Path(__file__).resolve().parents[2] / "scenarios" / "memory_sessions.py"
    out = cli(
        "scenario", "lint", str(scenarios), "-p", "stale_memory", "--seeds", "2", cwd=tmp_path
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PASS reachable" in out.stdout
