"""CI in one command (issue 42, item 6): ``run --quiet`` prints one line per cell instead of
the report's tables, and the gate rules ``run`` applied are in the manifest, so ``report``
shows the same gate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.shell import sh, user_env

VENDING = Path(__file__).resolve().parents[2] / "scenarios" / "vending.py"
RULE = "pass^1>=0.5"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return sh([sys.executable, "-m", "chaoseval", *args], cwd, user_env())


def _run(cwd: Path, journal: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return _cli(
        "run", "--agent", "naive", "--scenarios", str(VENDING), "-p", "timeout", "-p",
        "latency", "--trials", "2", "--seed", "7", "--journal", journal, "--no-progress",
        *extra, cwd=cwd,
    )  # fmt: skip


@pytest.fixture(scope="module")
def gated(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    where = tmp_path_factory.mktemp("quiet")
    return where, _run(where, "j.jsonl", "--quiet", "--gate", RULE)


def test_quiet_prints_one_line_per_cell(
    gated: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    _, proc = gated
    assert proc.returncode in (0, 1, 3), proc.stderr  # the gate's exit codes, not a usage error
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("wrote 18 trial(s) to j.jsonl")
    cells = [
        x for x in lines if re.match(r"^(timeout|latency) +\d+/\d+ passed \(clean \d+/\d+\)", x)
    ]
    assert [x.split()[0] for x in cells] == ["timeout", "latency"], proc.stdout
    assert all(x.split(")", 1)[1].split()[0] in ("broken", "degraded", "held", "inconclusive",
                                                  "improved", "did") for x in cells)  # fmt: skip
    assert "Verdict:" not in proc.stdout and "│" not in proc.stdout  # no tables
    assert lines[1:3] == cells  # the cells right after the count, the gate's lines after them


def test_quiet_with_no_report_prints_no_report(tmp_path: Path) -> None:
    proc = _run(tmp_path, "j.jsonl", "--quiet", "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["wrote 18 trial(s) to j.jsonl"]


def test_report_shows_the_gate_the_run_applied(
    gated: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    where, run = gated
    manifest = json.loads((where / "j.jsonl").read_text().splitlines()[0])
    assert manifest["gate"] == [RULE]
    ran = [x for x in run.stdout.splitlines() if RULE in x]
    assert ran, run.stdout  # run judged the rule
    report = _cli("report", "j.jsonl", cwd=where)
    assert report.returncode == 0, report.stderr  # a report reports; gate and run exit
    tail = report.stdout.split("the rules the run applied", 1)
    assert len(tail) == 2, report.stdout[-2000:]
    assert [x for x in tail[1].splitlines() if RULE in x] == ran
