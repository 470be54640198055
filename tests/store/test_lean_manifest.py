"""The column reader keeps the manifest lean (no scenario list, reference runs only as the
reports use them: a 100k-task manifest was ~400 MB of objects), reads the whole one again on
demand, or only a few tasks' entries of it, and refuses a bad manifest with read_journal's
message."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from chaoseval.errors import JournalError
from chaoseval.model.records import RunManifest
from chaoseval.store.columns import Trials, read_trials, trials_of
from chaoseval.store.journal import read_journal
from chaoseval.store.manifest import index_references, manifest_of

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


def _cut(whole: RunManifest, ids: set[str]) -> RunManifest:
    refs = whole.references
    return whole.model_copy(
        update={
            "scenarios": [s for s in whole.scenarios if s.id in ids],
            "references": None if refs is None else {k: v for k, v in refs.items() if k in ids},
        }
    )


def test_the_manifest_of_a_few_tasks_is_the_whole_one_cut_to_them(tmp_path: Path) -> None:
    """What sample reads (issue 47: the whole 100k-task manifest as objects was 670 MB of
    sample's 733): every field but the scenario list and reference runs whole, those two
    holding only the tasks asked for, in the manifest's order; the same from a lean read and
    from a journal in memory."""
    path = _journal(tmp_path)
    whole = read_journal(path).manifest
    ids = [s.id for s in whole.scenarios]
    assert len(ids) > 3 and whole.references
    wanted = {ids[2], ids[0], "no-such-task"}
    t = read_trials(path)
    assert t.lean_at is not None  # read lean: the line is read again, cut
    got = t.manifest_of(wanted)
    assert [s.id for s in got.scenarios] == [ids[0], ids[2]]
    assert got.references is not None and set(got.references) <= {ids[0], ids[2]}
    assert got == _cut(whole, wanted)
    assert got.model_dump_json() == _cut(whole, wanted).model_dump_json()
    in_memory = trials_of(whole, read_journal(path).records, path)
    assert in_memory.lean_at is None and in_memory.manifest_of(wanted) == got
    assert t.manifest_of(set()).scenarios == [] and t.manifest_of(set()).references == {}
    assert manifest_of(b'{"type": "trial"}', wanted) is None  # the full reader names why


def test_the_manifest_of_a_run_without_reference_runs(tmp_path: Path) -> None:
    path = _journal(tmp_path, lambda m: m.pop("references"))
    whole = read_journal(path).manifest
    assert whole.references is None
    ids = {whole.scenarios[1].id}
    got = read_trials(path).manifest_of(ids)
    assert got == _cut(whole, ids) and got.references is None
    assert "references" not in got.model_fields_set  # absent stays absent


def test_a_manifest_line_of_megabytes_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest line longer than the megabyte the reader looks for its end in at a time (a
    100k-task manifest is a 54 MB line) is read to its end, no further: cut from that line,
    never from the whole manifest read again (a line read short or long would be)."""

    def many(m: dict[str, Any]) -> None:
        m["scenarios"] += [{**m["scenarios"][0], "id": f"extra-{i:05d}"} for i in range(12_000)]

    path = _journal(tmp_path, many)
    assert len(path.read_bytes().split(b"\n", 1)[0]) > 2 << 20
    whole = read_journal(path).manifest
    ids = {"extra-00000", "extra-11999", whole.scenarios[0].id}
    t = read_trials(path)

    def whole_again(self: Trials) -> RunManifest:
        raise AssertionError("the manifest line was not read as it is")

    monkeypatch.setattr(Trials, "full_manifest", whole_again)
    got = t.manifest_of(ids)
    assert [s.id for s in got.scenarios] == [whole.scenarios[0].id, "extra-00000", "extra-11999"]
    assert got == _cut(whole, ids)
