"""Project settings: chaoseval.toml or [tool.chaoseval], found upwards, flags override them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.config import RunSettings, find_config, load_config, project_config
from chaoseval.errors import ConfigError
from chaoseval.store.journal import read_journal

PROJECT = """\
[project]
name = "my-agent"

[tool.chaoseval]
agent = "naive"
scenarios = ["vending-refund-log-down"]
perturbations = ["latency", "timeout"]
trials = 1
seed = 3
journal = "out/run.jsonl"
gate = ["safety-violations == 0"]
"""


def test_found_upwards_chaoseval_toml_first_and_a_project_root_ends_the_search(
    tmp_path: Path,
) -> None:
    deep = tmp_path / "proj" / "src" / "pkg"
    deep.mkdir(parents=True)
    (tmp_path / "proj" / "pyproject.toml").write_text(PROJECT)
    assert find_config(deep) == tmp_path / "proj" / "pyproject.toml"
    (tmp_path / "proj" / "src" / "chaoseval.toml").write_text('agent = "resilient"\n')
    assert find_config(deep) == tmp_path / "proj" / "src" / "chaoseval.toml"
    # A pyproject.toml without [tool.chaoseval] is a project root of its own: nothing above it
    # (here: the other project's settings) applies.
    (deep / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    assert find_config(deep) is None
    assert project_config(start=deep) == project_config(start=tmp_path)  # both: no settings


def test_relative_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT + 'scenario_paths = ["scen"]\n')
    cfg = load_config(tmp_path / "pyproject.toml")
    assert cfg.journal == tmp_path / "out" / "run.jsonl"
    assert cfg.scenario_paths == [tmp_path / "scen"]
    # The agent came from the file: a module:factory there is imported from beside it.
    assert RunSettings.resolve(cfg).app_dir == tmp_path
    assert RunSettings.resolve(cfg, agent="resilient").app_dir == Path(".")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("trails = 5\n", "unknown setting 'trails'; did you mean 'trials'?"),
        ("trials = 0\n", "trials: Input should be greater than or equal to 1"),
        ('perturbations = "latency"\n', "perturbations: Input should be a valid list"),
        ("temperature = -1\n", "temperature"),
        ("agent = \n", "not valid TOML"),
        ('max_request_size = "lots"\n', "max_request_size: Value error, 'lots': write a size"),
        ("max_request_size = 0\n", "max_request_size"),
    ],
)
def test_a_bad_file_names_itself_and_the_setting(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "chaoseval.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        project_config(start=tmp_path)
    assert str(path) in str(exc.value) and says in str(exc.value)


def test_flags_override_the_file_and_a_list_flag_replaces_its_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    work = tmp_path / "sub"
    work.mkdir()
    monkeypatch.chdir(work)  # the settings are found from a subdirectory
    runner = CliRunner()
    res = runner.invoke(app, ["run", "-p", "timeout", "--seed", "5", "--no-report"])
    assert res.exit_code == 0, res.output
    journal = read_journal(tmp_path / "out" / "run.jsonl")
    m = journal.manifest
    assert m.agent == "naive" and m.trials == 1 and m.seed == 5
    assert [c.name for c in m.cells] == ["clean", "timeout"]  # not latency + timeout
    assert [s.id for s in m.scenarios] == ["vending-refund-log-down"]

    # report and gate read the configured journal when given none; gate uses the file's rules.
    res = runner.invoke(app, ["report", "-f", "json"])
    assert res.exit_code == 0, res.output
    assert [p["name"] for p in json.loads(res.output)["perturbations"]] == ["clean", "timeout"]
    res = runner.invoke(app, ["gate", "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert "safety-violations == 0" in res.output
    res = runner.invoke(app, ["gate", "--resamples", "200", "-r", "pass^1 >= 1.0"])
    # One task cannot place pass^1 above or below 1.0: undecided, exit 3 (issue 41).
    assert res.exit_code == 3, res.output
    assert "safety-violations" not in res.output  # --rule replaced the file's list

    # --config names another file outright.
    other = tmp_path / "other.toml"
    other.write_text('agent = "resilient"\ntrials = 1\nscenarios = ["vending-*"]\n')
    res = runner.invoke(app, ["run", "--config", str(other), "--journal", "o.jsonl", "--no-report"])
    assert res.exit_code == 0, res.output
    m = read_journal(work / "o.jsonl").manifest
    assert m.agent == "resilient" and m.trials == 1 and len(m.scenarios) == 3
