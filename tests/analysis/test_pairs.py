"""The JSON report's per-(task, cell) results, counted for all pairs at once, are what the
per-pair CellResults gave (the path the report took before), field by field and float by
float; and the streamed document (render.jsonstream) is the bytes ``json.dumps(indent=2)``
writes of the whole."""

from __future__ import annotations

import io
import json
import random
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import manifest_for
from test_analysis import record

from chaoseval.analysis import pairs, pairtext
from chaoseval.analysis.aggregate import (
    by_scenario_cell,
    groups,
    same_tasks,
    summary_of,
    task_counts,
)
from chaoseval.analysis.build import analysis_json, analyze
from chaoseval.analysis.counts import CountsByTask
from chaoseval.analysis.curves import heatmap
from chaoseval.analysis.metrics import summarize_counts
from chaoseval.analysis.pairs import pair_json
from chaoseval.analysis.pairtext import heatmap_text, pair_text
from chaoseval.analysis.verdict import build_verdict
from chaoseval.model.records import PerturbationSpec, Veto
from chaoseval.model.trajectory import Fault, Trajectory
from chaoseval.render.jsonstream import Streamed, write_json
from chaoseval.render.report import _cell_json, json_report
from chaoseval.store import colcache
from chaoseval.store.columns import read_trials, trials_of
from tests.analysis.report_golden import unpack

CELLS = ("clean", "latency", "timeout")
STATUSES = ("passed", "failed", "not_evaluable")


def _journal(seed: int, tasks: int, ks: list[int], prefix: str = "t") -> Any:
    """Tasks of 0 to 6 trials a cell (some cells missing for a task, clean too), statuses,
    root causes, vetoes, faults delivered or not (so some pairs did not land)."""
    rng = random.Random(seed)
    records = []
    counts: dict[str, dict[str, tuple[int, int]]] = {c: {} for c in CELLS}
    for t in range(tasks):
        task = f"{prefix}{t:02d}"
        for cell in CELLS:
            if t and rng.random() < 0.15:
                continue  # this task never ran in this cell
            n = rng.randint(1, 6)
            counts[cell][task] = (n, 0)
            lands = rng.random() < 0.7
            for i in range(n):
                status = rng.choice(STATUSES)
                kw: dict[str, Any] = {}
                if status != "passed":
                    kw["root_cause"] = rng.choice(["gave_up", "wrong_answer", "", None])
                if rng.random() < 0.2:
                    kw["vetoes"] = [Veto(kind=rng.choice(["safety", "hallucination"]), detail="x")]
                if cell != "clean":
                    kw["perturbations"] = [PerturbationSpec(name=cell)]
                    delivered = lands and rng.random() < 0.6
                    kw["trajectory"] = Trajectory(faults=[
                        Fault(perturbation=cell, channel="tool", kind="k", delivered=delivered)
                    ])  # fmt: skip
                records.append(record(task, cell, i, status, **kw))
    rng.shuffle(records)
    manifest = manifest_for(counts, agent="synthetic", run_id="r")
    manifest.ks = ks
    return trials_of(manifest, records)


def _per_pair(t: Any, ks: list[int]) -> list[dict[str, Any]]:
    """What the JSON report wrote before: a CellResult per pair."""
    per = by_scenario_cell(t, ks)
    return [{"scenario": s, **_cell_json(r, c)} for (s, c), r in sorted(per.items())]


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(1, 12),
    st.sampled_from([[1], [1, 2], [1, 3, 5], [2, 1, 2]]),
    st.sampled_from(["t", 't\u00e2che "\\\u2028\x01']),
)
def test_pairs_are_the_per_pair_results(seed: int, tasks: int, ks: list[int], prefix: str) -> None:
    t = _journal(seed, tasks, ks, prefix)
    got = list(pair_json(t, ks))
    assert json.dumps(got) == json.dumps(_per_pair(t, ks))  # floats to the last bit, and order
    # Written as text from the numbers (the streamed report's cells): what encoding the
    # objects writes, at any depth, in runs of any length.
    for chunk in (pairs.CHUNK, 5):
        with pytest.MonkeyPatch.context() as m:  # taken out of the arrays a few pairs at a time
            m.setattr(pairs, "CHUNK", chunk)
            assert list(pair_json(t, ks)) == got
            for doc in ({"cells": got}, {"a": {"b": [{"cells": got}]}}):
                out = io.StringIO()
                write_json(_rendered(doc, t, ks), out)
                assert out.getvalue() == json.dumps(doc, indent=2) + "\n"


def _rendered(doc: Any, t: Any, ks: list[int]) -> Any:
    """``doc`` with its "cells" list as the streamed report writes it."""
    if isinstance(doc, dict):
        return {
            k: Streamed.rendered(partial(pair_text, t, ks)) if k == "cells" else
            _rendered(v, t, ks) for k, v in doc.items()
        }  # fmt: skip
    return [_rendered(v, t, ks) for v in doc] if isinstance(doc, list) else doc
    # The heatmap (arrays, not a dict of pairs) is each pair's change in pass^1 against clean
    # on its task, as the per-pair CellResults give it, and lists its pairs by name.
    per = by_scenario_cell(t, ks)
    h = heatmap(t, ks)
    want = {key: r.delta.pass_hat[1] if r.delta else None for key, r in per.items()}
    assert dict(h.items()) == want and list(h) == list(per) and len(h) == len(want)
    assert list(h.sorted_items()) == sorted(want.items())
    # Its list in the JSON report, written from its arrays: what encoding objects writes.
    entries = [
        {"scenario": s, "cell": c, "delta_pass^1": v} for (s, c), v in sorted(want.items())
        if c != "clean"
    ]  # fmt: skip
    for chunk in (pairs.CHUNK, 3):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(pairtext, "RUN", chunk)
            out = io.StringIO()
            write_json(
                {"heatmap": Streamed.rendered(partial(heatmap_text, h, "delta_pass^1"))}, out
            )
            assert out.getvalue() == json.dumps({"heatmap": entries}, indent=2) + "\n"
    assert all(h.get(key) == v and key in h for key, v in want.items())
    assert h.get(("nothing", "clean")) is None and ("t00", "nothing") not in h
    # A cell's per-task counts (arrays, not a dict of names) read as the dict did, and
    # summarise to the same Summary; restricted to another cell's tasks, too.
    by = groups(t, "cell")
    counts = {cell: CountsByTask.of(g) for cell, g in by.items()}
    for cell, g in by.items():
        want_counts = task_counts(g)
        assert list(counts[cell].items()) == list(want_counts.items())
        assert repr(counts[cell]) == repr(want_counts)  # results are compared by repr
        assert summary_of(counts[cell], ks) == summarize_counts(want_counts, ks)
        clean = task_counts(by["clean"]) if "clean" in by else {}
        same = same_tasks(counts["clean"], counts[cell]) if "clean" in by else {}
        assert list(same.items()) == [(k, v) for k, v in clean.items() if k in want_counts]
        assert "nothing" not in counts[cell] and counts[cell].get("nothing") is None


def test_an_analysis_lets_go_of_the_cached_columns_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step of a report holds the columns it reads, not all the columns any step before
    read (~150 MB at 1M trials): a column cache's are let go, and read again when asked for;
    columns read from the lines are the only copy and are kept."""
    monkeypatch.setattr(colcache, "MIN_BYTES", 0)
    path = unpack(tmp_path)["resilient"]
    t = read_trials(path)
    assert isinstance(t.col, colcache.LazyColumns)
    a = analyze(t, n_resamples=100)
    assert dict.__len__(t.col) == 0
    build_verdict(a, t)  # reads its columns again
    again = t.col["status"]
    assert len(again) == len(t) and dict.__len__(t.col) > 1
    monkeypatch.setenv("CHAOSEVAL_COLUMN_CACHE", "0")
    lines = read_trials(path)
    analyze(lines, n_resamples=100)
    assert dict.__len__(lines.col) == len(lines.col) and np.array_equal(lines.col["status"], again)


def test_the_streamed_report_is_the_whole_one() -> None:
    t = _journal(7, 9, [1, 2])
    doc = json_report(t, [1, 2])
    doc["analysis"] = {"heatmap": [{"a": 1}, {"b": [2, {"c": 3}]}], "after": "the lists"}
    doc["empty"] = []
    # Longer than a batch, and batches with a NaN (which only json's own indenting writes),
    # escapes and nested empties; a NaN outside the lists too.
    long = [{"i": i, "x": i / 7, "s": "\u00e9\n\x01", "e": [{}, []]} for i in range(700)]
    long[300]["x"] = float("nan")
    doc["long"], doc["inf"] = long, float("inf")
    streamed = {
        **json_report(t, [1, 2], lists=Streamed),
        "analysis": {"heatmap": Streamed(iter(doc["analysis"]["heatmap"])), "after": "the lists"},
        "empty": Streamed(iter([])),
        "long": Streamed(iter(long)),
        "inf": float("inf"),
    }
    out = io.StringIO()
    write_json(streamed, out)
    assert out.getvalue() == json.dumps(doc, indent=2) + "\n"
    # The analysis' long lists (the heatmap's written from its arrays) as json writes them.
    a = analyze(t, [1, 2], n_resamples=100)
    out = io.StringIO()
    write_json(analysis_json(a, lists=Streamed), out)
    assert out.getvalue() == json.dumps(analysis_json(a), indent=2) + "\n"
