"""`chaoseval init`: the scaffolds pass their own checks as generated."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.authoring.lint import lint_paths
from chaoseval.authoring.scaffold import write_plugin, write_scenario
from chaoseval.cli.app import app
from chaoseval.errors import ConfigError


def test_init_scenario_passes_lint_as_generated(tmp_path):
    result = CliRunner().invoke(
        app, ["init", "scenario", "bookshop-cancel", "--dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    path = tmp_path / "bookshop-cancel.yaml"
    (report,) = lint_paths([path], seeds=[0, 1, 2], trials=2)
    assert report.scenario == "bookshop-cancel"
    assert report.ok, [(f.check, f.summary, f.details) for f in report.findings]
    reach = next(f for f in report.findings if f.check == "reachable")
    assert not reach.skipped and len(reach.details) == 2  # both listed cells were canaried


def test_init_scenario_refuses_to_overwrite_and_bad_ids(tmp_path):
    write_scenario("a-b", tmp_path)
    with pytest.raises(ConfigError, match="already exists"):
        write_scenario("a-b", tmp_path)
    write_scenario("a-b", tmp_path, force=True)
    with pytest.raises(ConfigError, match="scenario id"):
        write_scenario("Bad Name", tmp_path)
    with pytest.raises(ConfigError, match="plugin name"):
        write_plugin("9lives", tmp_path)


def run_plugin_tests(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_init_plugin_writes_a_package_whose_test_passes(tmp_path):
    result = CliRunner().invoke(app, ["init", "plugin", "flaky-auth", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "flaky-auth"
    pyproject = (root / "pyproject.toml").read_text()
    assert '[project.entry-points."chaoseval.perturbations"]' in pyproject
    assert 'flaky-auth = "flaky_auth.plugin:FlakyAuth"' in pyproject
    proc = run_plugin_tests(root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 passed" in proc.stdout


def test_the_generated_plugin_test_fails_when_the_plugin_is_broken(tmp_path):
    root = write_plugin("noisy", tmp_path)
    plugin = root / "noisy" / "plugin.py"
    # A plugin that logs its fault but lets the call through: the agent never sees it fail.
    text = plugin.read_text().replace(
        "        raise ToolHTTPError(p.status, message, retry_after=p.retry_after)",
        "        return await call_next(call)",
    )
    assert text != plugin.read_text()
    plugin.write_text(text)
    proc = run_plugin_tests(root)
    assert proc.returncode != 0
    assert "test_on_reaches_the_agent" in proc.stdout
