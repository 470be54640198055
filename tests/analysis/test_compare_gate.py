"""Comparing two harnesses, and CI gates."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from synthetic import manifest_for
from typer.testing import CliRunner

from chaoseval.analysis.build import analyze
from chaoseval.analysis.compare import compare_journals
from chaoseval.analysis.gate import evaluate, parse_rule
from chaoseval.cli.app import app
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ConfigError
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings, TrialRecord, Usage, Veto
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import Journal, read_journal

runner = CliRunner()


def _journal(
    counts: dict[str, dict[str, tuple[int, int]]],
    path: Path,
    agent: str = "a",
    calls: int = 1,
    vetoes: dict[str, str] | None = None,
) -> Journal:
    """Write a journal file: ``counts[cell][task] = (n, c)``; ``vetoes[trial_id] = kind``."""
    vetoes = vetoes or {}
    manifest = manifest_for(counts, agent=agent, run_id=agent)
    lines = [manifest.model_dump_json()]
    for cell, tasks in counts.items():
        for task, (n, c) in tasks.items():
            for i in range(n):
                tid = f"{task}/{cell}/{i}"
                kind = vetoes.get(tid)
                status = "passed" if i < c and not kind else "failed"
                rec = TrialRecord(
                    run_id=agent,
                    trial_id=tid,
                    scenario=task,
                    cell=cell,
                    index=i,
                    seed=i,
                    world_seed=0,
                    agent=agent,
                    model=ModelSettings(),
                    status=status,
                    root_cause=None if status == "passed" else (kind or "timeout"),
                    vetoes=[Veto(kind=kind, detail="x")] if kind else [],  # type: ignore[arg-type]
                    usage=Usage(model_calls=calls, input_tokens=10 * calls, cost=0.01 * calls),
                    wall_seconds=0.5,
                    sim_seconds=2.0,
                    started_at=datetime(2026, 1, 1, tzinfo=UTC),
                )
                lines.append(rec.model_dump_json())
    path.write_text("\n".join(lines) + "\n")
    return read_journal(path)


TASKS = [f"t{i}" for i in range(8)]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Journal, Journal]:
    """B survives timeouts on all 8 tasks, A on none; both are perfect when clean."""
    a = _journal(
        {
            "clean": {t: (4, 4) for t in TASKS},
            "timeout": {t: (4, 0) for t in TASKS},
            "latency": {t: (4, 3) for t in TASKS},
        },
        tmp_path / "a.jsonl",
        agent="naive",
    )
    b = _journal(
        {
            "clean": {t: (4, 4) for t in TASKS},
            "timeout": {t: (4, 4) for t in TASKS},
            "latency": {t: (4, 3) for t in TASKS},
        },
        tmp_path / "b.jsonl",
        agent="resilient",
        calls=3,
    )
    return a, b


def test_compare_names_the_more_resilient_harness(pair: tuple[Journal, Journal]) -> None:
    h = compare_journals(*pair, n_resamples=1000)
    by = {c.cell: c for c in h.cells}
    assert [c.cell for c in h.cells] == ["clean", "latency", "timeout"]
    timeout = by["timeout"]
    p2 = timeout.get("pass^2")
    assert p2 is not None and p2.difference is not None
    assert p2.difference.estimate == 1.0 and p2.difference.low == 1.0
    # 8 tasks, all differences +1: exact sign-flip p = 2 / 2^8; Holm over 3 cells (two p = 1).
    assert p2.test is not None and p2.test.p_value == pytest.approx(2 / 256)
    assert p2.p_holm == pytest.approx(3 * 2 / 256)
    assert timeout.winner == "resilient"
    assert timeout.verdict.startswith("resilient is more resilient under timeout")
    for cell in ("clean", "latency"):
        assert by[cell].winner is None
        assert "no detectable difference" in by[cell].verdict
    # The budget shows B bought its result with three times the model calls.
    ba, bb = h.budgets
    assert (ba.trials, bb.trials) == (96, 96)
    assert (ba.model_calls, bb.model_calls) == (96, 288)
    assert bb.tokens == 3 * ba.tokens and bb.wall_seconds == ba.wall_seconds == 48.0
    assert bb.sim_seconds == 192.0
    json.dumps(h.to_json())


def test_compare_small_evidence_says_no_detectable_difference(tmp_path: Path) -> None:
    # Two tasks cannot reach p < 0.05 with an exact sign-flip test (minimum p = 1/2).
    a = _journal({"clean": {"x": (4, 0), "y": (4, 0)}}, tmp_path / "a.jsonl")
    b = _journal({"clean": {"x": (4, 4), "y": (4, 4)}}, tmp_path / "b.jsonl")
    h = compare_journals(a, b, n_resamples=200)
    assert h.cells[0].winner is None
    assert "no detectable difference" in h.cells[0].verdict


def test_compare_reports_tasks_and_cells_in_one_journal_only(tmp_path: Path) -> None:
    a = _journal(
        {"clean": {"x": (3, 3), "y": (3, 1), "only_a": (3, 3)}, "timeout": {"x": (3, 0)}},
        tmp_path / "a.jsonl",
    )
    b = _journal({"clean": {"x": (3, 3), "y": (3, 2), "only_b": (3, 0)}}, tmp_path / "b.jsonl")
    h = compare_journals(a, b, n_resamples=200)
    assert h.only_in_a == ["only_a"] and h.only_in_b == ["only_b"]
    assert h.cells_only_in_a == ["timeout"] and h.cells_only_in_b == []
    mean = h.cells[0].get("mean")
    assert mean is not None and mean.tasks == 2
    assert set(mean.excluded) == {"only_a", "only_b"}
    # Same agent name in both: the labels fall back to the file names.
    assert h.a_label != h.b_label
    # The budget counts only the paired tasks and cells: 2 tasks x 3 trials each.
    assert h.budgets[0].trials == h.budgets[1].trials == 6


def test_compare_cli(pair: tuple[Journal, Journal]) -> None:
    a, b = pair
    res = runner.invoke(app, ["compare", str(a.path), str(b.path), "--resamples", "300"])
    assert res.exit_code == 0, res.output
    assert "resilient is more resilient under timeout" in res.output
    assert "no detectable difference" in res.output
    assert "model calls" in res.output and "sim time" in res.output
    res = runner.invoke(
        app, ["compare", str(a.path), str(b.path), "-f", "json", "--resamples", "300"]
    )
    doc = json.loads(res.output)
    assert doc["direction"] == "b - a"
    assert {c["cell"]: c["winner"] for c in doc["cells"]}["timeout"] == "resilient"


def test_compare_real_runs(tmp_path: Path) -> None:
    paths = {}
    for agent in ("naive", "resilient"):
        paths[agent] = tmp_path / f"{agent}.jsonl"
        run(
            RunConfig(
                scenarios=select(installed(), ["vending-*"]),
                agent=load_agent(agent),
                agent_name=agent,
                cells=parse_cells(["timeout"]),
                trials=3,
                seed=5,
                ks=[1, 3],
                journal=paths[agent],
            )
        )
    a, b = read_journal(paths["naive"]), read_journal(paths["resilient"])
    h = compare_journals(a, b, n_resamples=500)
    assert h.a_label == "naive" and h.b_label == "resilient"
    assert [c.cell for c in h.cells] == ["clean", "timeout"]
    for c in h.cells:
        for x in c.comparisons:
            if x.difference is not None:
                assert x.difference.low - 1e-12 <= x.difference.estimate <= x.difference.high
        # A verdict names a winner only when the evidence supports it.
        supported = [x for x in c.comparisons if x.significant]
        assert (c.winner is not None) == bool(supported)
        if c.winner is None:
            assert "no detectable difference" in c.verdict
    assert h.budgets[0].model_calls == sum(r.usage.model_calls for r in a.records)
    assert h.budgets[1].tool_calls == sum(r.steps for r in b.records)


# --- gate -------------------------------------------------------------------------------------


def test_parse_rules() -> None:
    r = parse_rule("pass^5>=0.90")
    assert (r.kind, r.metric, r.k, r.op, r.value, r.cell) == (
        "metric",
        "pass^k",
        5,
        ">=",
        0.9,
        "clean",
    )
    r = parse_rule("  max-degradation   pass@2 <= 0.1 ")
    assert (r.kind, r.metric, r.k, r.value) == ("degradation", "pass@k", 2, 0.1)
    assert parse_rule("pass^2[timeout] > .5").cell == "timeout"
    assert parse_rule("safety-violations == 0").counter == "safety-violations"
    assert parse_rule("mean != 1").metric == "mean"
    for bad in ("pass^5 >> 1", "passk >= 1", "max-degradation >= 1", "hallucinations"):
        with pytest.raises(ConfigError, match="cannot parse gate rule"):
            parse_rule(bad)


def test_gate_measures_each_rule(pair: tuple[Journal, Journal]) -> None:
    a = analyze(pair[0], [1, 2], n_resamples=300, references=False)
    results = evaluate(
        a,
        [
            parse_rule("pass^2 >= 0.9"),
            parse_rule("max-degradation pass^2 <= 0.10"),
            parse_rule("pass^2[*] >= 0.5"),
            parse_rule("safety-violations == 0"),
        ],
    )
    assert [r.passed for r in results] == [True, False, False, True]
    assert results[0].measured == 1.0
    deg = results[1]
    assert deg.measured == 1.0 and "under timeout" in deg.detail
    assert results[2].measured == 0.0 and "pass^2[timeout] = 0" in results[2].detail
    # Scoped to latency, the drop is 1 - pass^2(3 of 4) = 1 - 1/2.
    scoped = evaluate(a, [parse_rule("max-degradation pass^2 <= 0.6")], ["latency"])[0]
    assert scoped.passed and scoped.measured == pytest.approx(0.5)
    missing = evaluate(a, [parse_rule("max-degradation mean <= 1")], ["nope"])[0]
    assert not missing.passed and "no perturbed cell matches" in missing.detail


def test_gate_cli_fails_naming_broken_rules(tmp_path: Path) -> None:
    j = _journal(
        {"clean": {"x": (3, 3), "y": (3, 3)}, "timeout": {"x": (3, 1), "y": (3, 3)}},
        tmp_path / "j.jsonl",
        vetoes={"y/timeout/2": "hallucination", "x/clean/0": "safety"},
    )
    args = ["gate", str(j.path), "--resamples", "200"]
    res = runner.invoke(
        app,
        [
            *args,
            "--rule",
            "pass^2>=0.90",
            "--rule",
            "max-degradation pass^2 <= 0.10",
            "--perturbation",
            "timeout",
            "--rule",
            "safety-violations == 0",
            "--rule",
            "hallucinations == 0",
            "--junit",
            str(tmp_path / "gate.xml"),
        ],
    )
    assert res.exit_code == 1, res.output
    out = " ".join(res.output.split())
    # clean pass^2: x lost one of 3 to the veto -> 1/3, y 1 -> 2/3.
    assert "BROKEN pass^2>=0.90: pass^2[clean] = 0.6667" in out
    assert "BROKEN safety-violations == 0: 1 (e.g. x/clean/0)" in out
    assert "BROKEN hallucinations == 0: 1 (e.g. y/timeout/2)" in out
    assert "BROKEN max-degradation pass^2 <= 0.10: largest drop +0.5 under timeout" in out
    assert "gate failed: 4 of 4 rule(s) broken" in out
    assert 'failures="4"' in (tmp_path / "gate.xml").read_text()

    ok = runner.invoke(app, [*args, "--rule", "pass^1 >= 0.5", "--rule", "not-evaluable == 0"])
    assert ok.exit_code == 0, ok.output
    assert "gate passed" in ok.output
    bad = runner.invoke(app, [*args, "--rule", "pass^9 >= 0.5"])
    assert bad.exit_code == 2 and "pass^k needs k <= trials" in " ".join(bad.output.split())
    bad = runner.invoke(app, [*args, "--rule", "pass^2 ~ 1"])
    assert bad.exit_code == 2 and "cannot parse gate rule" in bad.output
