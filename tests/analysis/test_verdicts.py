"""Verdicts from one pre-declared metric, resilience only where there is something to lose,
and a suite that says when it is too small (issues 20 and 18 item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_compare_gate import _journal
from typer.testing import CliRunner

from chaoseval.analysis.build import analyze
from chaoseval.analysis.compare import CellCounts, compare_cells, compare_journals
from chaoseval.analysis.degradation import compare_counts
from chaoseval.analysis.gate import evaluate, parse_rule
from chaoseval.analysis.primary import FLOOR, at_floor, gatekeep, parse_primary
from chaoseval.analysis.verdict import build_verdict, verdict_json
from chaoseval.cli.app import app
from chaoseval.errors import ConfigError
from chaoseval.model.records import SCHEMA_VERSION
from chaoseval.store.journal import read_journal


def _cells(n: int, spec: dict[str, tuple[int, int]], tasks: int = 30) -> dict[str, CellCounts]:
    """One harness: ``spec[cell] = (passes, also)``: every task passes ``passes`` of ``n``."""
    return {cell: ({f"t{i}": (n, c) for i in range(tasks)}, set()) for cell, (c, _) in spec.items()}


def _one(a: dict[str, CellCounts], b: dict[str, CellCounts], primary: str, ks=(1, 5)):  # type: ignore[no-untyped-def]
    out = compare_cells(a, b, ks, parse_primary(primary), n_resamples=200)
    return {c.cell: c for c in out}


def test_equal_drops_from_a_floor_are_not_more_resilient() -> None:
    # A 1/5 -> 0/5, B 5/5 -> 4/5 on every task: both lose 0.2 of pass^1. The old verdict said
    # "A more resilient" from pass^5 (A's clean pass^5 is 0: nothing to lose).
    a = _cells(5, {"clean": (1, 0), "timeout": (0, 0)})
    b = _cells(5, {"clean": (5, 0), "timeout": (4, 0)})
    # The floor is chosen on two of A's five clean trials, the drop estimated on the other
    # three (issue 41): a task kept because its one success fell among the choosing trials
    # shows A losing nothing on the estimating ones. Counts fixed per task are the split's
    # worst case (with random trials the two halves are independent); no verdict either way.
    t = _one(a, b, "pass^1")["timeout"]
    did = t.get_resilience("pass^1")
    assert did is not None and did.difference is not None
    assert t.more_resilient is None and t.withheld is not None
    assert 0 < len(t.floor) < 30
    whys = t.floor.values()
    assert all("nothing to lose" in why and "a's 2 choosing" in why.lower() for why in whys)
    # Judged by pass^5 with five trials, no trial is left to choose on: no task is left out,
    # and A, whose clean pass^5 is 0, is never called more resilient.
    t = _one(a, b, "pass^5")["timeout"]
    assert t.more_resilient is None and not t.floor
    assert t.withheld is not None and "floor" in t.withheld


def test_scales_that_disagree_give_no_verdict() -> None:
    # A 5/10 -> 3/10 (loses 0.2, keeps 60%), B 10/10 -> 7/10 (loses 0.3, keeps 70%): the
    # difference of drops favours A, significantly; retention favours B.
    a = _cells(10, {"clean": (5, 0), "timeout": (3, 0)})
    b = _cells(10, {"clean": (10, 0), "timeout": (7, 0)})
    t = _one(a, b, "pass^1", ks=(1,))["timeout"]
    did = t.get_resilience("pass^1")
    assert did is not None and did.significant and did.difference is not None
    # -0.1 on all ten trials a side; the clean arm is estimated on the held-out half.
    assert did.difference.estimate < 0
    assert t.more_resilient is None and t.withheld is not None
    assert t.withheld.startswith("depends on the scale")
    assert "depends on the scale" in t.summary


def test_a_harness_at_the_floor_is_never_more_resilient() -> None:
    # A passes 1 in 10 and keeps it; B drops from 10/10 to 5/10. A loses less on both scales,
    # but its clean pass^1 is 0.1: it had (almost) nothing to lose.
    a = _cells(10, {"clean": (1, 0), "timeout": (1, 0)})
    b = _cells(10, {"clean": (10, 0), "timeout": (5, 0)})
    t = _one(a, b, "pass^1", ks=(1,))["timeout"]
    assert at_floor(t.clean_scores[0]) and t.clean_scores[0] == FLOOR
    assert t.more_resilient is None and t.withheld is not None and "floor" in t.withheld
    # Just above the floor, the same pattern is a verdict.
    a = _cells(10, {"clean": (2, 0), "timeout": (2, 0)})
    assert _one(a, b, "pass^1", ks=(1,))["timeout"].more_resilient == "A"


def test_secondary_metrics_are_tested_only_behind_the_primary() -> None:
    # pass^1 barely moves while pass^5 collapses: the verdict is pass^1's, and pass^5 keeps
    # its interval but is not tested.
    clean = {f"t{i}": (5, 5) for i in range(30)}
    hurt = {f"t{i}": (5, 4 if i % 3 else 5) for i in range(30)}
    p1 = compare_counts(hurt, clean, "pass^k", 1, n_resamples=100)
    p5 = compare_counts(hurt, clean, "pass^k", 5, n_resamples=100)
    for c in (p1, p5):
        c.p_holm = c.test.p_value if c.test else None
    p1.p_holm = 0.2  # as if pass^1 did not reject
    gatekeep([p5, p1], "pass^1")
    assert p1.gated_by is None and p5.gated_by == "pass^1" and not p5.significant
    assert p5.difference is not None and p5.difference.high < 0  # the interval still stands
    assert p5.to_json()["gated_by"] == "pass^1"


def test_report_flags_a_baseline_at_the_floor(tmp_path: Path) -> None:
    # The clean cell never passes: no perturbation can show degradation, and the verdict says
    # so instead of "no significant degradation".
    counts = {
        "clean": {f"t{i}": (3, 0) for i in range(8)},
        "timeout": {f"t{i}": (3, 0) for i in range(8)},
    }
    j = _journal(counts, tmp_path / "floor.jsonl")
    a = analyze(j, n_resamples=200)
    v = build_verdict(a, j)
    lines = v.lines()
    # Counts first (issue 41): the cell is inconclusive, and its line says why.
    assert lines[0].startswith("1 inconclusive of 1 perturbed cell(s)")
    assert "inconclusive" in lines[1] and "clean baseline is at the floor" in lines[1]
    assert "timeout: the clean baseline is at 0: this cell cannot show degradation." in lines
    cell = verdict_json(v)["cells"][0]
    assert cell["baseline_at_floor"] is True and cell["decided_by"] == "pass^1"


def test_report_judges_by_the_recorded_primary(tmp_path: Path) -> None:
    # pass^1 drops by a third of a pass on every task, pass^3 collapses: the recorded primary
    # decides what the verdict names; a journal without one reads as pass^1.
    counts = {
        "clean": {f"t{i}": (3, 3) for i in range(10)},
        "timeout": {f"t{i}": (3, 2) for i in range(10)},
    }
    for primary, metric in ((None, "pass^1"), ("pass^3", "pass^3")):
        j = _journal(counts, tmp_path / f"{metric}.jsonl", primary=primary)
        assert read_journal(j.path).manifest.primary == primary
        a = analyze(j, n_resamples=200)
        v = build_verdict(a, j)
        assert a.primary == v.metric == metric and v.cells[0].metric == metric
        assert v.lines()[0].startswith(f"1 degraded of 1 perturbed cell(s) ({metric}")


def test_compare_needs_one_primary_and_says_what_four_tasks_can_show(tmp_path: Path) -> None:
    four = {
        "clean": {f"t{i}": (3, 3) for i in range(4)},
        "timeout": {f"t{i}": (3, 0) for i in range(4)},
    }
    a = _journal(four, tmp_path / "a.jsonl", agent="a", primary="pass^1")
    b = _journal(four, tmp_path / "b.jsonl", agent="b", primary="pass^2")
    with pytest.raises(ConfigError, match="different primary metrics"):
        compare_journals(a, b)
    h = compare_journals(a, b, primary="pass^1", n_resamples=200)
    assert h.primary == "pass^1"
    first = h.sizing[0]
    assert "2^(1-4) = 0.125" in first and "no cell can be significant" in first
    doc = h.to_json()
    assert doc["primary"] == "pass^1" and doc["sizing"] == h.sizing
    assert all(c["verdict"]["decided_by"] == "pass^1" for c in doc["cells"])
    res = CliRunner().invoke(app, ["compare", str(a.path), str(b.path), "--primary", "pass^1"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    # Said before any table; and the table's title is not a verdict.
    assert text.index("no cell can be significant") < text.index("┏")
    assert "primary metric: pass^1" in text and "Better:" not in text


def test_gate_rules_without_a_metric_use_the_recorded_primary(tmp_path: Path) -> None:
    counts = {
        "clean": {f"t{i}": (3, 3) for i in range(10)},
        "timeout": {f"t{i}": (3, 2) for i in range(10)},
    }
    for primary, drop in ((None, 1 / 3), ("pass^3", 1.0)):
        j = _journal(counts, tmp_path / f"{primary}.jsonl", primary=primary)
        a = analyze(j, n_resamples=200)
        rules = [parse_rule("max-degradation <= 0.5"), parse_rule("primary[timeout] >= 0.5")]
        deg, level = evaluate(a, rules)
        assert deg.measured == pytest.approx(drop) and deg.passed == (drop <= 0.5)
        assert (
            level.measured == pytest.approx(1 - drop) and deg.rule.text == "max-degradation <= 0.5"
        )


def test_run_records_the_declared_primary(tmp_path: Path) -> None:
    args = ["run", "--agent", "naive", "-n", "2", "-s", "vending-*", "--no-report"]
    res = CliRunner().invoke(app, [*args, "--primary", "pass^3", "--journal", "x.jsonl"])
    assert res.exit_code != 0 and "needs at least 3 trials" in res.output
    journal = tmp_path / "j.jsonl"
    res = CliRunner().invoke(app, [*args, "--primary", "pass^2", "--journal", str(journal)])
    assert res.exit_code == 0, res.output
    m = read_journal(journal).manifest
    assert m.primary == "pass^2" and 2 in m.ks and m.schema_version == SCHEMA_VERSION
    res = CliRunner().invoke(app, ["report", str(journal), "-f", "json"])
    assert json.loads(res.output)["verdict"]["primary"] == "pass^2"


def test_retention_above_the_bootstrap_limit_is_the_delta_methods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over more tasks than a bootstrap is run on (inference.RATIO_BOOTSTRAP_MAX_N), retention's
    intervals are the delta method's, said in its note, and agree with the bootstrap's (10,000
    resamples of 100k tasks were ~20 s a cell)."""
    import numpy as np

    from chaoseval.analysis import resilience

    rng = np.random.default_rng(3)
    tasks = [f"t{i}" for i in range(resilience.RATIO_BOOTSTRAP_MAX_N + 100)]
    base = rng.beta(3, 1, len(tasks))

    def arm(q: np.ndarray) -> dict[str, tuple[int, int]]:
        return {t: (5, int(rng.binomial(5, q[i]))) for i, t in enumerate(tasks)}

    a, b = (arm(base * 0.7), arm(base)), (arm(base * 0.9), arm(base))
    p = parse_primary("pass^1")
    delta = resilience.retention(a, b, tasks, p, n_resamples=10_000, ci=0.95, seed=1)
    monkeypatch.setattr(resilience, "RATIO_BOOTSTRAP_MAX_N", len(tasks))
    boot = resilience.retention(a, b, tasks, p, n_resamples=4_000, ci=0.95, seed=1)
    assert delta is not None and boot is not None
    assert delta.note is not None and "delta method" in delta.note and boot.note is None
    for d, x in ((delta.a, boot.a), (delta.b, boot.b), (delta.difference, boot.difference)):
        assert d is not None and x is not None
        assert d.method == "delta method" and x.method == "percentile bootstrap"
        assert d.estimate == x.estimate and d.low < d.estimate < d.high
        assert abs(d.low - x.low) < 0.005 and abs(d.high - x.high) < 0.005
