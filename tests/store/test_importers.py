"""tau-bench results and Inspect AI eval logs give the same metrics as a chaoseval journal."""

from __future__ import annotations

import json
import zipfile
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.analysis.aggregate import by_cell
from chaoseval.cli.app import app
from chaoseval.errors import ConfigError
from chaoseval.store.importers import load_inspect, load_tau_bench

runner = CliRunner()

# Per task: rewards of 5 trials. a: 3 of 5 -> mean 3/5, pass^2 = 3*2/(5*4) = 3/10,
# pass@2 = 1 - 2*1/(5*4) = 9/10. b: 5 of 5 -> 1, 1, 1. c: 0 of 5 -> 0, 0, 0.
REWARDS = {"a": [1, 0, 1, 1, 0], "b": [1, 1, 1, 1, 1], "c": [0, 0, 0.5, 0, 0]}
EXPECTED_PASS_HAT_2 = (Fraction(3, 10) + 1 + 0) / 3
EXPECTED_PASS_AT_2 = (Fraction(9, 10) + 1 + 0) / 3
EXPECTED_MEAN = (Fraction(3, 5) + 1 + 0) / 3


def _close(x: float | None, f: Fraction) -> bool:
    return x is not None and abs(x - float(f)) < 1e-12


def _tau(path: Path, extra: list[dict] | None = None) -> Path:
    rows = [
        {"task_id": t, "trial": i, "reward": float(r), "info": {}, "traj": []}
        for t, rs in REWARDS.items()
        for i, r in enumerate(rs)
    ]
    path.write_text(json.dumps(rows + (extra or [])))
    return path


def test_tau_bench_metrics(tmp_path: Path) -> None:
    j = load_tau_bench(_tau(tmp_path / "tau.json"))
    [clean] = by_cell(j.records, [2])
    s = clean.summary
    assert s.tasks == 3 and s.trials == 15
    assert _close(s.mean, EXPECTED_MEAN)
    assert _close(s.pass_hat[2], EXPECTED_PASS_HAT_2)
    assert _close(s.pass_at[2], EXPECTED_PASS_AT_2)
    assert j.manifest.trials == 5 and j.manifest.ks == [1, 2, 5]


def test_tau_bench_errored_trials_are_not_evaluable(tmp_path: Path) -> None:
    crashed = {"task_id": "a", "trial": 5, "reward": 0.0, "info": {"error": "RateLimitError"}}
    j = load_tau_bench(_tau(tmp_path / "tau.json", [crashed]))
    [clean] = by_cell(j.records, [2])
    # Neither dropped (it is counted) nor scored as a failure (pass^2 unchanged).
    assert clean.not_evaluable == 1 and clean.trials == 16
    assert _close(clean.summary.pass_hat[2], EXPECTED_PASS_HAT_2)
    bad = next(r for r in j.records if r.status == "not_evaluable")
    assert bad.error == "RateLimitError" and bad.trial_id == "a/clean/5"


def test_tau2_simulations(tmp_path: Path) -> None:
    sims = [
        {"task_id": t, "trial": i, "reward_info": {"reward": r}, "duration": 2.0}
        for t, rs in REWARDS.items()
        for i, r in enumerate(rs)
    ]
    sims.append({"task_id": "b", "trial": 5, "termination_reason": "agent_error"})
    path = tmp_path / "tau2.json"
    path.write_text(json.dumps({"info": {"agent_info": {"llm": "m1"}}, "simulations": sims}))
    j = load_tau_bench(path)
    [clean] = by_cell(j.records, [2])
    assert _close(clean.summary.pass_hat[2], EXPECTED_PASS_HAT_2) and clean.not_evaluable == 1
    assert j.manifest.model.model == "m1"


def test_tau_bench_rejects_other_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ConfigError, match="tau-bench"):
        load_tau_bench(path)
    path.write_text("[{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_tau_bench(path)


def _samples() -> list[dict]:
    out = []
    for t, rs in REWARDS.items():
        for i, r in enumerate(rs):
            value = {1: "C", 0: "I", 0.5: "P"}[r]
            out.append(
                {
                    "id": t,
                    "epoch": i + 1,
                    "scores": {"match": {"value": value}, "other": {"value": 1.0}},
                    "model_usage": {"m": {"input_tokens": 10, "output_tokens": 5}},
                    "total_time": 1.5,
                }
            )
    return out


def test_inspect_json_log_with_epochs(tmp_path: Path) -> None:
    samples = _samples()
    samples.append({"id": "c", "epoch": 6, "scores": {}, "error": {"message": "sandbox died"}})
    log = {"version": 2, "eval": {"task": "qa", "model": "m", "config": {"epochs": 5}}}
    path = tmp_path / "log.json"
    path.write_text(json.dumps({**log, "samples": samples}))
    j = load_inspect(path)
    [clean] = by_cell(j.records, [2])
    assert _close(clean.summary.pass_hat[2], EXPECTED_PASS_HAT_2)
    assert _close(clean.summary.mean, EXPECTED_MEAN)
    assert clean.not_evaluable == 1
    assert j.records[0].usage.input_tokens == 10 and j.manifest.agent == "inspect qa"
    assert any("several scorers" in w for w in j.warnings)
    # Another scorer gives other verdicts: "other" passes everything.
    other = by_cell(load_inspect(path, scorer="other").records, [2])[0]
    assert other.summary.pass_hat[2] == 1.0
    with pytest.raises(ConfigError, match="no scorer 'nope'"):
        load_inspect(path, scorer="nope")


def test_inspect_eval_zip(tmp_path: Path) -> None:
    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", json.dumps({"eval": {"task": "qa", "model": "m"}}))
        for s in _samples():
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    [clean] = by_cell(load_inspect(path).records, [2])
    assert _close(clean.summary.pass_hat[2], EXPECTED_PASS_HAT_2)


def test_inspect_without_samples_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"eval": {"task": "qa"}, "samples": []}))
    with pytest.raises(ConfigError, match="no samples"):
        load_inspect(path)


def test_report_from_cli(tmp_path: Path) -> None:
    tau = _tau(tmp_path / "tau.json")
    res = runner.invoke(app, ["report", "--from", "tau-bench", str(tau), "-f", "json"])
    assert res.exit_code == 0, res.output
    clean = json.loads(res.output)["perturbations"][0]
    assert clean["name"] == "clean" and clean["tasks"] == 3
    assert abs(clean["pass_hat"]["2"] - float(EXPECTED_PASS_HAT_2)) < 1e-12
    res = runner.invoke(app, ["report", "--from", "nope", str(tau)])
    assert res.exit_code == 2 and "unknown --from" in res.output
    res = runner.invoke(app, ["gate", "--from", "tau-bench", str(tau), "--rule", "pass^2 >= 0.5"])
    assert res.exit_code == 1 and "pass^2[clean] = 0.4333" in res.output
