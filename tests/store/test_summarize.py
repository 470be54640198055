"""What the column reader takes of one trial (store.lite.summarize, one pass over its steps)
and how the builder lays it into the columns (store.columns: each row packed by struct as
numpy lays out a record), checked field by field on records built for each case."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from chaoseval.model.records import TrialRecord
from chaoseval.store.columns import NUMERIC, trials_of
from chaoseval.store.lite import DECODER, RefCalls, call_key, summarize

GOLDEN = Path(__file__).parents[1] / "analysis" / "golden_report" / "resilient.jsonl.gz"


def _base() -> dict[str, Any]:
    lines = gzip.decompress(GOLDEN.read_bytes()).splitlines()
    return dict(json.loads(lines[1]))


def _step(index: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"index": index, "kind": kind, **fields}


def _both(data: dict[str, Any]) -> list[Any]:
    """The record as the fast decoder reads it and as pydantic does (summarize takes both)."""
    line = json.dumps(data).encode()
    return [DECODER.decode(line), TrialRecord.model_validate_json(line)]


def _values(s: Any) -> dict[str, Any]:
    return dict(zip((name for name, _ in NUMERIC), s.values, strict=True))


def _trial(steps: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    data = _base()
    data["trajectory"] = {"steps": steps, "faults": fields.pop("faults", [])}
    data.update(fields)
    return data


FAULT = {"perturbation": "timeout", "channel": "tool", "kind": "timeout", "delivered": True}


@pytest.mark.parametrize(
    ("results", "failing"),
    [
        (["ok", "ok", "ok"], "c"),  # none failed: the last call
        (["ok", "timeout", "tool_error"], "b"),  # the first that did not come back ok
        (["malformed", "ok", "timeout"], "a"),
        ([None, "ok"], "b"),  # no result class counts as ok
    ],
)
def test_the_tool_behind_a_failure_and_each_calls_tally(results: list[Any], failing: str) -> None:
    names = "abc"
    steps = [
        _step(i, "tool", tool=names[i], args={"n": i}, result_class=rc, faults=[0] if i else [])
        for i, rc in enumerate(results)
    ]
    for r in _both(_trial(steps, faults=[FAULT])):
        s = summarize(r, {})
        assert s.failing_tool == failing
        assert s.tools == [
            (names[i], 1, 0 if rc in (None, "ok") else 1, 1 if i else 0)
            for i, rc in enumerate(results)
        ]


def test_counts_kinds_legality_and_sampling_in_one_pass() -> None:
    sent = {"sent_temperature": 0.2, "temperature": 0.7, "sent_seed": [1, 2], "seed": None}
    steps = [
        _step(0, "model", args=sent),
        _step(1, "tool", tool="a", args={}, result_class="ok"),
        _step(2, "tool", tool="b", args={}, error="No tool named b"),  # illegal
        _step(3, "tool", tool="a", args={}, result_class="ok"),  # vetoed for safety: illegal
        _step(4, "observation"),
        _step(5, "memory"),
        _step(6, "model", args={"temperature": 1.0}),  # nothing sent: not a sampling entry
        _step(7, "model", args={"sent_temperature": None, "sent_seed": 3}),
        _step(8, "answer"),
    ]
    vetoes = [
        {"kind": "safety", "detail": "x", "step": 3},
        {"kind": "hallucination", "detail": "y", "step": 1},
    ]
    for r in _both(_trial(steps, vetoes=vetoes)):
        s = summarize(r, {})
        v = _values(s)
        assert (v["kinds"], v["actions"], v["tool_calls"], v["legal"]) == (3, 8, 3, 1)
        assert (v["safety"], v["hallucination"]) == (1, 1)
        assert s.sampling == [(0.2, 0.7, "[1, 2]", None), (None, None, 3, None)]
        assert s.vetoes == [("safety", "x"), ("hallucination", "y")]
    no_model = [_step(0, "tool", tool="a", args={}, result_class="ok")]
    for r in _both(_trial(no_model)):
        s = summarize(r, {})
        assert (s.sampling, _values(s)["kinds"], s.failing_tool) == ([], 2, "a")


@pytest.mark.parametrize(
    ("status", "checks", "held", "utility", "outcome"),
    [
        ("passed", [True, True], [], 1, -1),  # no contract: no outcome
        ("passed", [True, False], [True], 1, 1),  # degraded: a check failed, a contract held
        ("passed", [True], [False], 1, 0),  # recovered
        ("passed", [], [False], 0, 0),  # no check ran: not done (every check passed: none)
        ("failed", [True], [False], 1, 2),
        ("failed", [False], [False, True], 1, 2),
        ("failed", [False], [], 0, -1),
        ("not_evaluable", [True], [True], -1, 2),  # not scored
    ],
)
def test_utility_and_outcome(
    status: str, checks: list[bool], held: list[bool], utility: int, outcome: int
) -> None:
    data = _trial(
        [],
        status=status,
        root_cause=None if status == "passed" else "harness_error",
        error=None if status == "passed" else "x",
        checks=[{"name": f"c{i}", "passed": p} for i, p in enumerate(checks)],
        contracts=[{"name": f"k{i}", "held": h} for i, h in enumerate(held)],
    )
    for r in _both(data):
        v = _values(summarize(r, {}))
        assert (v["utility"], v["outcome"]) == (utility, outcome)
    data["utility"] = False  # recorded: taken as it is, when scored
    for r in _both(data):
        assert _values(summarize(r, {}))["utility"] == (-1 if status == "not_evaluable" else 0)


def test_reference_measures() -> None:
    steps = [
        _step(0, "tool", tool="a", args={"x": 1}, result_class="ok"),
        _step(1, "tool", tool="a", args={"x": 2}, result_class="ok"),
        _step(2, "tool", tool="z", args={}, result_class="ok"),  # a tool the reference never calls
    ]
    data = _trial(steps)
    ref = RefCalls({call_key("a", {"x": 1}), call_key("b", {})}, {"a", "b"})
    for r in _both(data):
        v = _values(summarize(r, {r.scenario: ref}))
        assert (v["correct"], v["right_tool"], v["coverage"]) == (1 / 3, 2 / 3, 1 / 2)
        none = _values(summarize(r, {}))
        assert all(math.isnan(none[k]) for k in ("correct", "right_tool", "coverage"))
    data["status"], data["root_cause"], data["error"] = "not_evaluable", "harness_error", "x"
    for r in _both(data):  # not scored: not measured against the reference
        assert math.isnan(_values(summarize(r, {r.scenario: ref}))["correct"])


def test_rows_packed_into_the_columns_keep_every_value() -> None:
    """Extreme values of every column type, over several chunks of rows (4096 a chunk)."""
    base = _trial([_step(0, "tool", tool="a", args={}, result_class="ok")])
    records = []
    for i in range(9000):
        data = {**base, "index": i, "trial_id": f"{base['scenario']}/{base['cell']}/{i}"}
        data["seed"] = [2**63 - 1, -(2**63), 0][i % 3]
        data["usage"] = {"model_calls": 2**31 - 1, "input_tokens": 2**62, "output_tokens": 0,
                         "cost": 1e-300 * (i % 2)}  # fmt: skip
        data["channel_overhead"] = None if i % 2 else 0.25
        data["injection_followed"] = [None, True, False][i % 3]
        records.append(TrialRecord.model_validate(data))
    t = trials_of(None, records)
    assert len(t) == 9000
    for row in (0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8999):
        r = records[row]
        want = _values(summarize(r, {}))
        for name, value in want.items():
            got = t.col[name][row].item()
            assert got == value or (math.isnan(got) and math.isnan(value)), (row, name)
        assert t.value("scenario", row) == r.scenario and t.value("cell", row) == r.cell
        assert t.value("root_cause", row) is None
