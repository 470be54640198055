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
from chaoseval.model.records import ModelSettings, PerturbationSpec, TrialRecord, Usage, Veto
from chaoseval.model.trajectory import Fault, Trajectory
from chaoseval.render.comparison import render_comparison_markdown
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import Journal, read_journal

runner = CliRunner()


def _journal(
    counts: dict[str, dict[str, tuple[int, int]]],
    path: Path,
    agent: str = "a",
    calls: int = 1,
    vetoes: dict[str, str] | None = None,
    landed: dict[str, set[str]] | None = None,
    primary: str | None = None,
) -> Journal:
    """Write a journal file: ``counts[cell][task] = (n, c)``; ``vetoes[trial_id] = kind``;
    ``landed[cell]``: that cell is perturbed and its fault reached the agent on these tasks."""
    vetoes = vetoes or {}
    landed = landed or {}
    manifest = manifest_for(counts, agent=agent, run_id=agent)
    manifest.primary = primary
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
                if cell in landed:
                    rec.perturbations = [PerturbationSpec(name=cell)]
                    hit = task in landed[cell]
                    fault = Fault(perturbation=cell, channel="tool", kind=cell, delivered=hit)
                    rec.trajectory = Trajectory(faults=[fault])
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
    assert p2 is not None and p2.difference is not None and p2.test is not None
    # 8 tasks, every per-task difference +1 (0/1 values): adjusted Wald and exact sign-flip
    # must both reject; the sign-flip's p = 2 / 2^8 is the larger. Interval inside (0, 1].
    assert p2.difference.estimate == 1.0 and 0 < p2.difference.low < 1 == p2.difference.high
    assert p2.test.method.startswith("adjusted Wald") and p2.test.p_value == 2 / 2**8
    # Holm over 3 cells: the two others have p = 1.
    assert p2.p_holm == pytest.approx(3 * p2.test.p_value)
    # Both agents are perfect on clean, so B's advantage under timeout is also a smaller drop.
    r2 = timeout.get_resilience("pass^2")
    assert r2 is not None and r2.difference is not None
    assert (r2.a, r2.b, r2.difference.estimate) == (0.0, -1.0, 1.0) and r2.significant
    assert (timeout.better, timeout.more_resilient) == ("B", "B")
    assert "resilient is better under timeout" in timeout.summary
    assert "resilient is more resilient under timeout" in timeout.summary
    assert by["clean"].resilience == [] and by["clean"].more_resilient is None
    for cell in ("clean", "latency"):
        assert by[cell].better is None and by[cell].more_resilient is None
        assert "no detectable difference" in by[cell].summary
    # The budget shows B bought its result with three times the model calls.
    ba, bb = h.budgets
    assert (ba.trials, bb.trials) == (96, 96)
    assert (ba.model_calls, bb.model_calls) == (96, 288)
    assert bb.tokens == 3 * ba.tokens and bb.wall_seconds == ba.wall_seconds == 48.0
    assert bb.sim_seconds == 192.0
    json.dumps(h.to_json())


TEN = [f"t{i}" for i in range(10)]


def _cells(tmp_path: Path, name: str, clean: int, timeout: int) -> Journal:
    """Ten tasks, four trials each: ``clean`` and ``timeout`` passes per task."""
    counts = {"clean": {t: (4, clean) for t in TEN}, "timeout": {t: (4, timeout) for t in TEN}}
    return _journal(counts, tmp_path / f"{name}.jsonl", agent=name)


def test_better_by_the_same_margin_everywhere_is_not_more_resilient(tmp_path: Path) -> None:
    # B passes two more of four trials than A on every task, clean and under timeout alike.
    a = _cells(tmp_path, "weak", clean=2, timeout=0)
    b = _cells(tmp_path, "strong", clean=4, timeout=2)
    h = compare_journals(a, b, [1], n_resamples=200)
    for c in h.cells:
        assert c.better == "B", c.summary
        mean = c.get("mean")
        assert mean is not None and mean.difference is not None
        assert mean.difference.estimate == pytest.approx(0.5)
    timeout = h.cells[1]
    drop = timeout.get_resilience("mean")
    assert drop is not None and drop.difference is not None and drop.test is not None
    assert drop.difference.estimate == 0.0 and drop.test.p_value == 1.0
    assert timeout.more_resilient is None
    assert "no detectable difference in resilience" in timeout.summary


def test_losing_nothing_where_the_other_drops_is_more_resilient(tmp_path: Path) -> None:
    # A is better on clean runs (4/4 against 3/4) but loses half; B loses nothing.
    a = _cells(tmp_path, "brittle", clean=4, timeout=2)
    b = _cells(tmp_path, "steady", clean=3, timeout=3)
    h = compare_journals(a, b, [1], n_resamples=200)
    clean, timeout = h.cells
    assert (clean.better, clean.more_resilient) == ("A", None)
    assert (timeout.better, timeout.more_resilient) == ("B", "B")
    drop = timeout.get_resilience("mean")
    assert drop is not None and drop.difference is not None
    # The clean arm estimated on the trials held out of the floor choice (issue 41): every
    # other one, here the 1st and 3rd; steady's 2nd and 4th (one pass) chose.
    assert (drop.b, drop.a, drop.difference.estimate) == (-0.5, -0.25, 0.25)
    assert "steady is more resilient under timeout" in timeout.summary

    doc = h.to_json()
    assert doc["schema_version"] == 2
    assert doc["a"]["label"] == "brittle" and doc["b"]["label"] == "steady"
    cells = {c["cell"]: c for c in doc["cells"]}
    # Each harness's own score under its own name (they were swapped before).
    mean = next(x for x in cells["clean"]["comparisons"] if x["metric"] == "mean")
    assert (mean["score_a"], mean["score_b"]) == (1.0, 0.75)
    assert mean["difference"]["estimate"] == pytest.approx(-0.25)
    assert cells["clean"]["resilience"] is None
    verdict = {"better": "A", "more_resilient": None, "decided_by": "pass^1"}
    assert cells["clean"]["verdict"] == {**verdict, "resilience_withheld": None}
    verdict = {"better": "B", "more_resilient": "B", "decided_by": "pass^1"}
    assert cells["timeout"]["verdict"] == {**verdict, "resilience_withheld": None}
    res = cells["timeout"]["resilience"]["mean"]
    assert (res["drop_a"], res["drop_b"], res["estimate"]) == (-0.5, -0.25, 0.25)
    assert res["low"] <= 0.25 <= res["high"] and res["low"] > 0
    assert 0 < res["p_value"] < 0.05 and res["p_holm"] is not None and res["p_bh"] is not None
    assert cells["timeout"]["summary"].startswith("timeout: steady is better under timeout")
    json.dumps(doc)


def test_a_fault_that_landed_in_one_harness_only_is_left_out_of_resilience(
    tmp_path: Path,
) -> None:
    # The timeout reached A on every task but B only on t0..t7: on t8 and t9 B was never
    # tested, so a drop there would compare a fault with no fault. The absolute comparison
    # keeps them (B really did pass there under the timeout cell); resilience leaves them out.
    counts_a = {"clean": {t: (4, 4) for t in TEN}, "timeout": {t: (4, 0) for t in TEN}}
    counts_b = {"clean": {t: (4, 4) for t in TEN}, "timeout": {t: (4, 4) for t in TEN}}
    a = _journal(counts_a, tmp_path / "a.jsonl", agent="a", landed={"timeout": set(TEN)})
    b = _journal(counts_b, tmp_path / "b.jsonl", agent="b", landed={"timeout": set(TEN[:8])})
    h = compare_journals(a, b, [1], n_resamples=200)
    timeout = h.cells[1]
    drop = timeout.get_resilience("pass^1")
    absolute = timeout.get("pass^1")
    assert drop is not None and absolute is not None
    assert drop.tasks == 8 and absolute.tasks == 10
    for t in ("t8", "t9"):
        assert drop.excluded[t] == "the fault landed only in a's run"
    text = render_comparison_markdown(h)
    assert "timeout: left out, the fault landed only in a's run: t8, t9" in text


def test_compare_small_evidence_says_no_detectable_difference(tmp_path: Path) -> None:
    # Two tasks cannot reach p < 0.05 with an exact sign-flip test (minimum p = 1/2).
    a = _journal({"clean": {"x": (4, 0), "y": (4, 0)}}, tmp_path / "a.jsonl")
    b = _journal({"clean": {"x": (4, 4), "y": (4, 4)}}, tmp_path / "b.jsonl")
    h = compare_journals(a, b, n_resamples=200)
    assert h.cells[0].better is None
    assert "no detectable difference" in h.cells[0].summary


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
    text = " ".join(res.output.split())  # the terminal wraps long lines
    assert "resilient is more resilient under timeout" in text
    assert "drop B - drop A" in res.output
    assert "no detectable difference" in res.output
    assert "model calls" in res.output and "sim time" in res.output
    res = runner.invoke(
        app, ["compare", str(a.path), str(b.path), "-f", "json", "--resamples", "300"]
    )
    doc = json.loads(res.output)
    assert doc["direction"] == "b - a" and doc["schema_version"] == 2
    verdicts = {c["cell"]: c["verdict"] for c in doc["cells"]}
    assert verdicts["timeout"]["more_resilient"] == verdicts["timeout"]["better"] == "B"
    p2 = next(x for x in doc["cells"][0]["comparisons"] if x["metric"] == "pass^2")
    assert (p2["score_a"], p2["score_b"]) == (1.0, 1.0)
    timeout = next(c for c in doc["cells"] if c["cell"] == "timeout")
    p2 = next(x for x in timeout["comparisons"] if x["metric"] == "pass^2")
    assert (p2["score_a"], p2["score_b"]) == (0.0, 1.0)  # A is naive, which fails every timeout
    res = runner.invoke(app, ["compare", str(a.path), str(b.path), "-f", "markdown"])
    assert res.exit_code == 0, res.output
    assert "Drops against clean" in res.output and "drop B - drop A" in res.output
    assert "Better:" not in res.output  # a table title is not a verdict


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
        # A verdict names a side only when the evidence supports it.
        supported = [x for x in c.comparisons if x.significant]
        assert (c.better is not None) == bool(supported)
        resilient = [x for x in c.resilience if x.significant]
        assert (c.more_resilient is not None) == bool(resilient)
        if c.better is None:
            assert "no detectable difference" in c.summary
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
    # A rule that names no metric is the run's recorded primary metric (issue 20).
    r = parse_rule("max-degradation >= 1")
    assert (r.kind, r.metric, r.k) == ("degradation", None, None)
    for bad in ("pass^5 >> 1", "passk >= 1", "max-degradation pass^ >= 1", "hallucinations"):
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
    # A threshold is decided by its task-level interval (issue 41): clean pass^2 is 1 on all 8
    # tasks, but 8 tasks cannot place the rate above 0.9, so that rule is undecided.
    assert [(r.passed, r.undecided) for r in results] == [
        (False, True), (False, False), (False, False), (True, False),
    ]  # fmt: skip
    assert results[0].measured == 1.0
    deg = results[1]
    assert deg.measured == 1.0 and "under timeout" in deg.detail
    assert results[2].measured == 0.0 and "pass^2[timeout] = 0" in results[2].detail
    # Scoped to latency, the drop is 1 - pass^2(3 of 4) = 1 - 1/2.
    # Its interval [+0.156, +0.644] straddles 0.6 (undecided) and lies under 0.7 (held).
    scoped = evaluate(a, [parse_rule("max-degradation pass^2 <= 0.6")], ["latency"])[0]
    assert scoped.undecided and scoped.measured == pytest.approx(0.5)
    scoped = evaluate(a, [parse_rule("max-degradation pass^2 <= 0.7")], ["latency"])[0]
    assert scoped.passed and scoped.measured == pytest.approx(0.5)
    # A --perturbation naming no cell is a usage error (exit 2), with a did-you-mean.
    with pytest.raises(ConfigError, match="no cell is or stacks 'latncy'; did you mean 'latency'"):
        evaluate(a, [parse_rule("max-degradation mean <= 1")], ["latncy"])


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
    # Two tasks place clean pass^2 nowhere: the threshold is undecided by its interval.
    assert "UNDECIDED pass^2>=0.90: pass^2[clean] = 0.6667 [0, 1]" in out
    assert "BROKEN safety-violations == 0: 1 (e.g. x/clean/0)" in out
    assert "BROKEN hallucinations == 0: 1 (e.g. y/timeout/2)" in out
    # Two tasks cannot place the drop either: its interval straddles the bound.
    assert (
        "UNDECIDED max-degradation pass^2 <= 0.10: largest drop under timeout: Δpass^2 -0.500"
        in out
    )
    assert "gate failed: 2 of 4 rule(s) broken" in out
    xml = (tmp_path / "gate.xml").read_text()
    assert 'failures="2"' in xml and '<error type="inconclusive"' in xml

    ok = runner.invoke(app, [*args, "--rule", "pass^1 >= 0", "--rule", "not-evaluable == 0"])
    assert ok.exit_code == 0, ok.output
    assert "gate passed" in ok.output
    # Undecided alone is exit 3, which --allow-inconclusive lets pass.
    open_ = runner.invoke(app, [*args, "--rule", "pass^1 >= 0.5"])
    assert open_.exit_code == 3 and "gate undecided" in open_.output, open_.output
    allowed = runner.invoke(app, [*args, "--rule", "pass^1 >= 0.5", "--allow-inconclusive"])
    assert allowed.exit_code == 0, allowed.output
    bad = runner.invoke(app, [*args, "--rule", "pass^9 >= 0.5"])
    assert bad.exit_code == 2 and "pass^k needs k <= trials" in " ".join(bad.output.split())
    bad = runner.invoke(app, [*args, "--rule", "pass^2 ~ 1"])
    assert bad.exit_code == 2 and "cannot parse gate rule" in bad.output


def test_the_gate_says_a_drop_as_the_report_does(tmp_path: Path) -> None:
    """The report printed a loss of every timeout trial as Δ -1.000, the gate as a drop of
    '+1': the gate now says the report's change, sign and three places, and its bound on it."""
    a = _journal(
        {"clean": {t: (4, 4) for t in TASKS}, "timeout": {t: (4, 0) for t in TASKS}},
        tmp_path / "a.jsonl",
    )
    report = runner.invoke(app, ["report", str(a.path)])
    assert "-1.000 [" in report.output, report.output
    gate = runner.invoke(app, ["gate", str(a.path), "--rule", "max-degradation pass^1 <= 0.1"])
    assert gate.exit_code == 1, gate.output
    out = " ".join(gate.output.split())
    assert "largest drop under timeout: Δpass^1 -1.000 [" in out, out
    assert "the rule holds when Δpass^1 >= -0.1 in each cell" in out
    assert "+1 " not in out


def test_compare_fails_on_a_regression(pair: tuple[Journal, Journal], tmp_path: Path) -> None:
    """compare --fail-on-regression (issue 41): B worse or less resilient in a cell exits 1,
    and each cell says its status in the report's words, with its scope."""
    a, b = (str(j.path) for j in pair)
    worse = runner.invoke(app, ["compare", b, a, "--fail-on-regression", "-f", "json"])
    assert worse.exit_code == 1, worse.output
    statuses = json.loads(worse.output[worse.output.index("{") :])["statuses"]
    assert statuses["timeout"]["score"] == "degraded"
    assert statuses["timeout"]["resilience"] == "degraded"
    assert statuses["timeout"]["score_scope"] == "tasks like these"
    # Without the flag the comparison is a report: exit 0.
    assert runner.invoke(app, ["compare", b, a]).exit_code == 0
    better = runner.invoke(app, ["compare", a, b, "--fail-on-regression"])
    assert better.exit_code in (0, 3), better.output
    assert "timeout" in better.output and "B improved" in better.output
