"""A journal remembers where its scenarios came from (issue 42, item 7): the report's replay
line carries ``--scenarios`` and runs as printed; replay and sample find the run's scenario
files by themselves and say when one changed since the run."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chaoseval.model.records import RunManifest, ScenarioInfo
from tests.e2e.shell import sh, user_env

VENDING = Path(__file__).resolve().parents[2] / "scenarios" / "vending.py"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return sh([sys.executable, "-m", "chaoseval", *args], cwd, user_env())


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A run on a scenario file given with --scenarios, and the report's replay line."""
    where = tmp_path_factory.mktemp("sources")
    shutil.copy(VENDING, where / "vending.py")
    proc = _cli(
        "run", "--agent", "naive", "--scenarios", "vending.py", "-p", "timeout",
        "--trials", "2", "--seed", "7", "--journal", "j.jsonl", "--no-progress",
        cwd=where,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if "replay one:" in x)
    return where, line.split("replay one:", 1)[1].strip()


def test_the_printed_replay_line_runs_from_anywhere(ran: tuple[Path, str], tmp_path: Path) -> None:
    where, line = ran
    words = shlex.split(line)
    assert words[words.index("--scenarios") + 1] == str(where / "vending.py")
    words[2] = str(where / words[2])  # the journal, as the report was given it
    proc = _cli(*words[1:], cwd=tmp_path)  # elsewhere: not the run's directory
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "reproduced exactly" in proc.stdout
    assert "changed since the run" not in proc.stderr


def test_the_manifest_records_each_scenario_file_and_its_hash(ran: tuple[Path, str]) -> None:
    where, _ = ran
    manifest = json.loads((where / "j.jsonl").read_text().splitlines()[0])
    assert manifest["scenario_paths"] == [str(where / "vending.py")]
    digest = __import__("hashlib").sha256((where / "vending.py").read_bytes()).hexdigest()
    assert {s["sha256"] for s in manifest["scenarios"]} == {digest}


def test_a_changed_file_is_said_and_sample_rebuilds_instructions(
    ran: tuple[Path, str], tmp_path: Path
) -> None:
    where, _ = ran
    journal = tmp_path / "j.jsonl"
    shutil.copy(where / "j.jsonl", journal)
    source = where / "vending.py"
    before = source.read_bytes()
    # Without --scenarios, sample finds the run's file from the manifest.
    proc = _cli("sample", str(journal), "--status", "any", "-n", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "### Instruction\n\n> Customer" in proc.stdout
    assert "changed since the run" not in proc.stderr
    try:
        source.write_bytes(before + b"\n# edited after the run\n")
        proc = _cli("sample", str(journal), "--status", "any", "-n", "1", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "changed since the run" in proc.stderr and str(source) in proc.stderr
        trial = "vending-refund-dispensed/timeout/0"
        proc = _cli("replay", str(journal), trial, cwd=tmp_path)
        assert "changed since the run" in proc.stderr, proc.stderr
    finally:
        source.write_bytes(before)


def test_an_older_manifest_without_hashes_or_paths_still_reads() -> None:
    info = ScenarioInfo.model_validate({"id": "a", "source": "a.py"})
    assert info.sha256 is None
    assert "sha256" not in info.model_dump()  # written back as it was read
    old = {
        "run_id": "r", "chaoseval_version": "0", "python": "3", "packages": {}, "agent": "naive",
        "model": {}, "seed": 0, "trials": 1, "ks": [1], "clock": "virtual", "scenarios": [],
        "cells": [], "concurrency": 1, "created_at": "2026-01-01T00:00:00Z",
        "schema_version": 7,
    }  # fmt: skip
    manifest = RunManifest.model_validate(old)
    assert manifest.scenario_paths is None and manifest.gate is None
    dumped = manifest.model_dump(mode="json")
    assert "scenario_paths" not in dumped and "gate" not in dumped
