"""store.columns reads a journal as read_journal does: same trials, same order, same errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaoseval.errors import JournalError
from chaoseval.store.columns import read_trials
from chaoseval.store.journal import read_journal
from tests.store.journal_maker import write_journal


def _lines(tmp_path: Path) -> list[bytes]:
    path = tmp_path / "j.jsonl"
    write_journal(path, 60, tasks=3, cells=2, steps=2)
    return path.read_bytes().splitlines(keepends=True)


def _both(path: Path) -> None:
    j, t = read_journal(path), read_trials(path)
    assert [t.trial_id(r) for r in range(len(t))] == [r.trial_id for r in j.records]
    assert t.names("root_cause") == [r.root_cause for r in j.records]
    assert t.col["status"].tolist() == [("passed", "failed").index(r.status) for r in j.records]
    assert t.warnings == j.warnings and t.cut_off_line == j.cut_off_line
    assert [t.record(r) for r in range(len(t))] == j.records


def _status(line: bytes, status: str, cause: str | None = None) -> dict:
    d = json.loads(line)
    d["status"], d["root_cause"] = status, cause
    return d


def test_reruns_keep_the_first_place_and_the_last_values(tmp_path: Path) -> None:
    """--resume re-runs a not-evaluable trial (maybe again and again): its rows merge."""
    lines = _lines(tmp_path)
    for i in (3, 7):
        lines[i] = json.dumps(_status(lines[i], "not_evaluable", "harness_error")).encode() + b"\n"
    again = [_status(lines[3], "not_evaluable", "cause0"), _status(lines[7], "failed", "cause1"),
             _status(lines[3], "failed", "cause2")]  # fmt: skip
    odd = [_status(lines[5], s) for s in ("not_evaluable", "passed")]
    for d in odd:
        d["trial_id"] = "imported-5"
    del lines[5]  # (under an id of its own: a trial more than its manifest allows beside it)
    extra = [json.dumps(d).encode() + b"\n" for d in (*again, *odd)]
    path = tmp_path / "rerun.jsonl"
    path.write_bytes(b"".join(lines) + b"".join(extra) + lines[8][:40])
    _both(path)
    t = read_trials(path)
    assert t.value("root_cause", 2) == "cause2" and len(t) == 60
    assert t.trial_id(59) == "imported-5" and t.value("root_cause", 59) is None


_FAULT = {"perturbation": "latency", "channel": "tool", "kind": "latency"}


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.pop("seed"),  # a required field missing
        lambda d: d.update(index="three"),  # a wrong type
        lambda d: d.update(schema_version=99),
        lambda d: d.update(type="other"),
        lambda d: d.update(status="maybe"),
        # Enumerated values and formats the fast structs check as TrialRecord does: a line
        # with one of these wrong was once read as if valid.
        lambda d: d.update(started_at="yesterday"),
        lambda d: d["trajectory"]["steps"][0].update(kind="dance"),
        lambda d: d["trajectory"]["steps"][0].update(result_class="weird"),
        lambda d: d["trajectory"]["faults"].append({**_FAULT, "channel": "ether"}),
        lambda d: d["vetoes"].append({"kind": "rude", "detail": "x"}),
    ],
)
def test_bad_records_give_read_journals_messages(tmp_path: Path, damage: object) -> None:
    lines = _lines(tmp_path)
    d = json.loads(lines[4])
    damage(d)  # type: ignore[operator]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines[:4]) + json.dumps(d).encode() + b"\n" + lines[5])
    with pytest.raises(JournalError) as want:
        read_journal(path)
    with pytest.raises(JournalError) as got:
        read_trials(path)
    assert str(got.value) == str(want.value) and ":5:" in str(got.value)


def test_broken_json_mid_file_and_no_manifest(tmp_path: Path) -> None:
    lines = _lines(tmp_path)
    for name, data in (
        ("torn.jsonl", b"".join(lines[:3]) + lines[3][:50] + b"\n" + lines[4]),
        ("headless.jsonl", b"".join(lines[1:4])),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(JournalError) as want:
            read_journal(path)
        with pytest.raises(JournalError) as got:
            read_trials(path)
        assert str(got.value) == str(want.value)
