"""tau-bench results and Inspect AI eval logs give the same metrics as a chaoseval journal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.analysis.aggregate import by_cell
from chaoseval.cli.app import app
from chaoseval.errors import ConfigError
from chaoseval.store.importers import load_inspect, load_tau_bench
from chaoseval.store.inspect_log import ZIP_ZSTD, read_zip_member
from tests.store.sources import (
    tau2_pass_hat,
    tau2_results,
    tau_bench_pass_hat,
    tau_bench_results,
    write_tau2_dir,
)

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
    assert j.manifest.trials == 5 and j.manifest.ks == [1, 2, 3, 4, 5]


def test_tau_bench_crashed_trials_score_as_tau_bench_does(tmp_path: Path) -> None:
    # tau-bench's run.py writes a trial that raised as reward 0.0 with info.error and a
    # traceback, and its display_metrics counts it as a failure: so does the import, by default.
    rows = tau_bench_results({0: [1, 1, 0, 1], 1: [1, "crash", 1, 1], 2: [0, 0, 0, "crash"]})
    path = tmp_path / "tau.json"
    path.write_text(json.dumps(rows))
    j = load_tau_bench(path)
    assert j.manifest.ks == [1, 2, 3, 4]
    [clean] = by_cell(j.records, j.manifest.ks)
    for k in (1, 2, 3, 4):
        assert _close(clean.summary.pass_hat[k], tau_bench_pass_hat(rows, k)), k
    # 0: 3 of 4, 1: 3 of 4, 2: 0 of 4 -> pass^2 = (3/6 + 3/6 + 0) / 3 = 1/3.
    assert _close(clean.summary.pass_hat[2], Fraction(1, 3))
    bad = next(r for r in j.records if r.trial_id == "1/clean/1")
    assert bad.status == "failed" and bad.root_cause == "crash"
    assert bad.error is not None and "RateLimitError" in bad.error

    # --errors-as not-evaluable: neither dropped (counted) nor a failure (n shrinks to 3).
    kept = load_tau_bench(path, errors_as="not-evaluable")
    [clean] = by_cell(kept.records, [2])
    assert clean.not_evaluable == 2 and clean.trials == 12
    assert _close(clean.summary.pass_hat[2], (Fraction(3, 6) + 1 + 0) / 3)
    with pytest.raises(ConfigError, match="--errors-as"):
        load_tau_bench(path, errors_as="maybe")


def test_tau2_results_json(tmp_path: Path) -> None:
    sims = {"t1": [1, 1, 0], "t2": [1, "infrastructure_error", 1, 1], "t3": [0, "agent_error", 1]}
    results = tau2_results(sims, num_trials=4)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    j = load_tau_bench(path)
    assert j.manifest.model.model == "gpt-4.1" and j.manifest.agent == "tau2-bench llm_agent"
    [clean] = by_cell(j.records, [1, 2, 3])
    # tau2 drops only the infrastructure error; agent_error (no reward) is a failure.
    assert clean.not_evaluable == 1
    for k in (1, 2, 3):
        assert _close(clean.summary.pass_hat[k], tau2_pass_hat(results["simulations"], k)), k
    assert _close(clean.summary.pass_hat[2], (Fraction(1, 3) + 1 + 0) / 3)
    # Today's behaviour on request: every crashed simulation apart.
    [kept] = by_cell(load_tau_bench(path, errors_as="not-evaluable").records, [1, 2])
    assert kept.not_evaluable == 2
    # t3 is 1 of 2 instead of 1 of 3: pass^1 = (2/3 + 1 + 1/2) / 3.
    assert _close(kept.summary.pass_hat[1], (Fraction(2, 3) + 1 + Fraction(1, 2)) / 3)


def test_tau2_directory_format(tmp_path: Path) -> None:
    sims = {
        "t1": [1, 1, 0, 1],
        "t2": [1, "infrastructure_error", 0, 1],
        "t3": [1, 1, 1, "max_steps"],
    }
    results = tau2_results(sims, num_trials=4)
    run = tmp_path / "run"
    write_tau2_dir(results, run)
    expected = {k: tau2_pass_hat(results["simulations"], k) for k in (1, 2, 3)}
    for where in (run, run / "results.json"):
        j = load_tau_bench(where)
        [clean] = by_cell(j.records, [1, 2, 3])
        assert clean.trials == 12 and clean.not_evaluable == 1
        for k, want in expected.items():
            assert _close(clean.summary.pass_hat[k], want), (where, k)
        assert j.manifest.ks == [1, 2, 3, 4]
    # A file the index lists but that is gone is named, as tau2's own loader refuses it.
    next((run / "simulations").glob("*.json")).unlink()
    with pytest.raises(ConfigError, match="missing"):
        load_tau_bench(run)


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
    # Three tasks cannot place pass^2 against 0.5: undecided, exit 3 (issue 41).
    assert res.exit_code == 3 and "pass^2[clean] = 0.4333" in res.output


# Written by inspect-ai itself: three samples over 4 epochs, mockllm answering "A" when the
# input says yes (usage preset, so it never fetches a tokenizer: offline), and sample c's epoch 2
# raising, which Inspect records as an errored sample and leaves out of its accuracy.
_INSPECT_TASK = """
import sys
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import generate, solver

def answer(input, tools, tool_choice, config):
    out = ModelOutput.from_content("mockllm", "A" if "yes" in input[-1].text else "B")
    out.usage = ModelUsage(input_tokens=7, output_tokens=1, total_tokens=8)
    return out

@solver
def crash_once():
    async def solve(state, generate):
        if state.sample_id == "c" and state.epoch == 2:
            raise RuntimeError("sandbox died")
        return state
    return solve

samples = [Sample(id="a", input="yes", target="A"), Sample(id="b", input="no", target="A"),
           Sample(id="c", input="yes", target="A")]
task = Task(dataset=samples, solver=[crash_once(), generate()], scorer=match(), epochs=4,
            fail_on_error=False)
[log] = eval(task, model=get_model("mockllm/model", custom_outputs=answer),
             log_dir=sys.argv[1], display="none")
assert log.status == "success", log.status
"""


@pytest.mark.slow
def test_real_inspect_eval_log_with_zstd_entries(tmp_path: Path) -> None:
    env = {**os.environ, "INSPECT_USE_ZSTD": "1", "INSPECT_LOG_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _INSPECT_TASK, str(tmp_path / "logs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = (tmp_path / "logs").glob("*.eval")
    with zipfile.ZipFile(path) as z:
        methods = {i.filename: i.compress_type for i in z.infolist()}
        # The point of the test: Python's zipfile alone cannot read these entries.
        with pytest.raises(NotImplementedError):
            z.read("header.json")
        header = json.loads(read_zip_member(path, z, z.getinfo("header.json")))
    assert methods["header.json"] == ZIP_ZSTD
    assert {m for n, m in methods.items() if n.startswith("samples/")} == {ZIP_ZSTD}

    j = load_inspect(path)
    [clean] = by_cell(j.records, j.manifest.ks)
    assert j.manifest.ks == [1, 2, 3, 4] and clean.trials == 12 and clean.not_evaluable == 1
    crashed = next(r for r in j.records if r.status == "not_evaluable")
    assert crashed.trial_id == "c/clean/1" and "sandbox died" in (crashed.error or "")
    # Inspect's own accuracy (mean over samples of the epoch mean, errored epochs left out).
    [score] = header["results"]["scores"]
    assert _close(clean.summary.mean, Fraction(score["metrics"]["accuracy"]["value"]))
    assert _close(clean.summary.mean, Fraction(2, 3))
    # a 4/4, b 0/4, c 3/3 scored: pass^3 = (1 + 0 + 1) / 3; pass^4 leaves c out.
    assert _close(clean.summary.pass_hat[3], Fraction(2, 3))
    assert _close(clean.summary.pass_hat[4], Fraction(1, 2))
    assert j.records[0].usage.input_tokens == 7
    # Counted as failures on request.
    [failing] = by_cell(load_inspect(path, errors_as="failure").records, [1])
    assert failing.not_evaluable == 0 and _close(failing.summary.pass_hat[1], Fraction(7, 12))
    res = runner.invoke(app, ["report", "--from", "inspect", str(path), "-f", "json"])
    assert res.exit_code == 0, res.output


def test_errors_as_from_cli(tmp_path: Path) -> None:
    rows = tau_bench_results({0: [1, "crash"], 1: [1, 1]})
    path = tmp_path / "tau.json"
    path.write_text(json.dumps(rows))
    pass1 = {}
    for how in ("source", "not-evaluable"):
        res = runner.invoke(
            app, ["report", "--from", "tau-bench", str(path), "-f", "json", "--errors-as", how]
        )
        assert res.exit_code == 0, res.output
        pass1[how] = json.loads(res.output)["perturbations"][0]["pass_hat"]["1"]
    assert pass1 == {"source": 0.75, "not-evaluable": 1.0}
    res = runner.invoke(
        app, ["gate", "--from", "tau-bench", str(path), "-r", "pass^1 >= 0.9", "--errors-as", "x"]
    )
    assert res.exit_code == 2 and "--errors-as" in res.output
