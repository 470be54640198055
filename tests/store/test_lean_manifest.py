"""The column reader keeps the manifest lean (no scenario list, reference runs only as the
reports use them: a 100k-task manifest was ~400 MB of objects), reads the whole one again on
demand, and refuses a bad manifest with read_journal's message."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from chaoseval.errors import JournalError
from chaoseval.store.columns import read_trials
from chaoseval.store.journal import read_journal
from chaoseval.store.manifest import index_references

GOLDEN = Path(__file__).parent.parent / "analysis" / "golden_report" / "naive.jsonl.gz"


def _journal(tmp_path: Path, damage: Any = None) -> Path:
    lines = gzip.decompress(GOLDEN.read_bytes()).splitlines(keepends=True)
    if damage is not None:
        m = json.loads(lines[0])
        damage(m)
        lines[0] = json.dumps(m).encode() + b"\n"
    path = tmp_path / "j.jsonl"
    path.write_bytes(b"".join(lines))
    return path


def test_the_manifest_is_kept_lean_and_read_whole_on_demand(tmp_path: Path) -> None:
    path = _journal(tmp_path)
    whole = read_journal(path).manifest
    t = read_trials(path)
    assert whole.scenarios and whole.references  # a run's manifest: both recorded
    assert t.manifest.scenarios == [] and t.manifest.references is None
    assert t.manifest == whole.model_copy(update={"scenarios": [], "references": None})
    assert t.references == index_references(whole.references)
    assert t.full_manifest() == whole


def test_reference_calls_hold_each_key_and_tool_once(tmp_path: Path) -> None:
    """Scenarios whose references make the same call share its key and tool name (100k
    generated tasks held ~70 MB of copies of a few hundred keys)."""
    whole = read_journal(_journal(tmp_path)).manifest
    assert whole.references
    twice = {**whole.references, **{f"{sid}-copy": r for sid, r in whole.references.items()}}
    index = index_references(twice)
    assert index is not None
    keys = [k for c in index.calls.values() for k in c.keys]
    tools = [t for c in index.calls.values() for t in c.tools]
    assert len(keys) == 2 * len(set(keys)) and len({id(k) for k in keys}) == len(set(keys))
    assert len({id(t) for t in tools}) == len(set(tools)) < len(tools)


@pytest.mark.parametrize(
    "damage",
    [
        lambda m: m["scenarios"][1].update(id=3),
        lambda m: m["scenarios"][0].update(budgets={"max_steps": 0}),
        lambda m: m["scenarios"].append("x"),
        lambda m: m.pop("scenarios"),
        lambda m: m.update(scenarios={"a": 1}),
        lambda m: next(iter(m["references"].values())).update(steps="many"),
        lambda m: m.update(references=[1]),
        lambda m: m.update(schema_version=99),
        lambda m: m.update(seed="seven"),
    ],
)
def test_a_bad_manifest_gives_read_journals_message(tmp_path: Path, damage: Any) -> None:
    path = _journal(tmp_path, damage)
    with pytest.raises(JournalError) as want:
        read_journal(path)
    with pytest.raises(JournalError) as got:
        read_trials(path)
    assert str(got.value) == str(want.value) and ":1:" in str(got.value)
