"""A third-party perturbation package, pip-installed, is listed and used by the CLI end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tests" / "example_plugin"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(PACKAGE),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "TMPDIR": str(build)},  # keep the build out of the source tree
    )
    return target


def chaoseval(site: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run(
        [str(BIN / "chaoseval"), *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.slow
def test_installed_plugin_is_listed(site: Path) -> None:
    without = chaoseval(None, "perturbations", "list")
    assert without.returncode == 0, without.stderr
    assert "drop_field" not in without.stdout  # it is the install that makes it appear
    listed = chaoseval(site, "perturbations", "list")
    assert listed.returncode == 0, listed.stderr
    assert "drop_field" in listed.stdout
    assert "field=None" in listed.stdout


@pytest.mark.slow
def test_installed_plugin_runs_end_to_end(site: Path, tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    done = chaoseval(
        site,
        "run",
        "--agent",
        "naive",
        "-n",
        "3",
        "--seed",
        "4",
        "-s",
        "vending-refund-not-dispensed",
        "-p",
        "drop_field:field=machine_id",
        "--journal",
        str(journal),
        "--overwrite",
        "--no-progress",
        "--no-report",
        "--k",
        "1",
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    trials = [r for r in lines if r.get("cell", "").startswith("drop_field")]
    assert len(trials) == 3
    faults = [f for r in trials for f in r["trajectory"]["faults"]]
    assert faults and all(f["perturbation"] == "drop_field" for f in faults)
    assert all(f["detail"] == {"mode": "drop_field", "field": "machine_id"} for f in faults)
    assert all(f["delivered"] for f in faults)
    # the naive agent forwarded the missing machine id and failed, every time, and the plugin
    # (not the judge) says the dropped field is why
    assert all(r["status"] == "failed" for r in trials)
    assert {r["root_cause"] for r in trials} == {"missing_field_used"}
    (manifest,) = [r for r in lines if r["type"] == "manifest"]
    assert {
        "name": "missing_field_used",
        "label": "went on without a field the API stopped sending",
        "owner": "drop_field",
    } in manifest["root_causes"]
    assert {c["owner"] for c in manifest["root_causes"]} == {"core", "drop_field"}
    # The report labels the plugin's cause from the manifest: the plugin need not be installed.
    for installed in (site, None):
        report = chaoseval(installed, "report", str(journal), "--k", "1")
        assert report.returncode == 0, report.stderr
        assert "missing_field_used 3" in report.stdout
        assert (
            "missing_field_used: went on without a field the API stopped sending (drop_field)"
            in report.stdout
        )
