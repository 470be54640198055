"""A journal whose trial lines its manifest does not allow is refused, naming ``file:line``
and what is wrong, by every command that reads it (issue 39, item 6): a trial of a cell or a
task the manifest does not list, an index past its trials per cell, or more trials in one
(task, cell) than that. Each was read silently and counted before. What ``--resume`` writes
(a not-evaluable attempt and its re-run; trials added by ``--resume -n``) still reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.errors import JournalError
from chaoseval.store import ranges
from chaoseval.store.columns import read_trials
from chaoseval.store.journal import read_journal

TASK = "vending-refund-not-dispensed"
BASE = ["--agent", "naive", "--seed", "1", "-n", "2", "-s", TASK, "-p", "latency"]


def _run(journal: Path, *extra: str) -> Any:
    return CliRunner().invoke(
        app, ["run", *BASE, "--no-progress", "--journal", str(journal), *extra]
    )


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """A real run's lines: its manifest (2 trials per cell) and 2 cells x 1 task x 2 trials."""
    path = tmp_path_factory.mktemp("run") / "own.jsonl"
    out = _run(path)
    assert out.exit_code == 0, out.output
    return path.read_bytes().splitlines(keepends=True)


def _line(d: dict[str, Any]) -> bytes:
    return json.dumps(d).encode() + b"\n"


def _moved(**change: Any) -> Callable[[list[bytes]], tuple[bytes, int, str]]:
    """The last trial's line again, moved to another cell, task or index (its id to match)."""

    def make(lines: list[bytes]) -> tuple[bytes, int, str]:
        d = json.loads(lines[-1])
        d.update(change)
        d["trial_id"] = f"{d['scenario']}/{d['cell']}/{d['index']}"
        return b"".join(lines) + _line(d), len(lines) + 1, next(iter(change))

    return make


def _many(lines: list[bytes]) -> tuple[bytes, int, str]:
    """A thousand trials of one task and cell where the manifest says 2 (indices 2 on)."""
    d = json.loads(lines[-1])
    extra = []
    for i in range(2, 1002):
        d["index"], d["trial_id"] = i, f"{d['scenario']}/{d['cell']}/{i}"
        extra.append(_line(d))
    return b"".join(lines + extra), len(lines) + 1, "index 2"


def _same_index(lines: list[bytes]) -> tuple[bytes, int, str]:
    """Trials under ids of their own sharing index 0: one more than 2 in a (task, cell)."""
    d = json.loads(lines[-1])
    extra = []
    for n in range(3):
        d["index"], d["trial_id"] = 0, f"extra-{n}"
        extra.append(_line(d))
    # The task and cell's own 2 trials, then extra-0 is the third: refused there.
    return b"".join(lines + extra), len(lines) + 1, "holds 5 trials"


BAD = {
    "cell": _moved(cell="no-such-cell"),
    "task": _moved(scenario="no-such-task"),
    "index": _moved(index=7),
    "many": _many,
    "same-index": _same_index,
}
SAID = {"cell": "'no-such-cell'", "task": "'no-such-task'", "index": "index 7"}


def _commands(j: Path, clean: Path, trial: str) -> dict[str, list[str]]:
    return {
        "report": ["report", str(j)],
        "report-json": ["report", str(j), "--format", "json"],
        "gate": ["gate", str(j), "--rule", "pass^1>=0.0"],
        "summary": ["summary", str(j)],
        "compare": ["compare", str(clean), str(j)],
        "sample": ["sample", str(j)],
        "replay": ["replay", str(j), trial],
        "resume": ["run", *BASE, "--no-progress", "--journal", str(j), "--resume"],
    }


@pytest.mark.parametrize("kind", list(BAD))
def test_a_journal_its_manifest_does_not_allow_is_refused_everywhere(
    tmp_path: Path, own: list[bytes], kind: str
) -> None:
    data, line, said = BAD[kind](own)
    said = SAID.get(kind, said)
    j, clean = tmp_path / "j.jsonl", tmp_path / "clean.jsonl"
    j.write_bytes(data)
    clean.write_bytes(b"".join(own))
    trial = json.loads(own[1])["trial_id"]
    for name, args in _commands(j, clean, trial).items():
        out = CliRunner().invoke(app, args)
        assert out.exit_code not in (0, None), (name, out.output)
        text = " ".join(out.output.split())  # rich wraps long messages
        assert f"j.jsonl:{line}:" in text.replace(" ", ""), (name, out.output)
        assert said in text and "does not match its manifest" in text, (name, out.output)
    assert j.read_bytes() == data  # --resume refused before it wrote a line
    with pytest.raises(JournalError, match=f":{line}: .*does not match its manifest"):
        read_journal(j)  # the library's reader too


def test_forked_range_readers_refuse_as_one_pass(
    tmp_path: Path, own: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check runs on the joined columns: a range holding the bad line names it alike."""
    monkeypatch.setattr(ranges, "MIN_BYTES", 0)
    monkeypatch.setattr(ranges, "_single_threaded", lambda: True)
    monkeypatch.setenv("CHAOSEVAL_COLUMN_CACHE", "0")
    monkeypatch.setenv("CHAOSEVAL_READ_WORKERS", "3")
    data, line, _ = _many(own)
    j = tmp_path / "j.jsonl"
    j.write_bytes(data)
    with pytest.raises(JournalError, match=f"j.jsonl:{line}: .* index 2, but"):
        read_trials(j)


def _resumed(tmp_path: Path, own: list[bytes]) -> Path:
    """A not-evaluable attempt and its re-run, then trials added by --resume -n 4."""
    d = json.loads(own[1])
    d["status"], d["root_cause"], d["error"] = "not_evaluable", "harness_error", "broke"
    j = tmp_path / "j.jsonl"
    j.write_bytes(own[0] + _line(d) + b"".join(own[2:]))
    out = _run(j, "--resume")
    assert out.exit_code == 0, out.output
    out = _run(j, "--resume", "-n", "4")
    assert out.exit_code == 0, out.output
    return j


def test_what_resume_writes_still_reads(tmp_path: Path, own: list[bytes]) -> None:
    """What --resume writes: its manifest again with the new count before trials added by
    -n, which every reader takes (indices 2 and 3 are not refused)."""
    j = _resumed(tmp_path, own)
    lines = [json.loads(x) for x in j.read_bytes().splitlines()]
    again = [i for i, x in enumerate(lines) if x["type"] == "manifest"]
    assert again[1:] and lines[again[1]]["trials"] == 4 and lines[0]["trials"] == 2
    assert max(x["index"] for x in lines if x["type"] == "trial") == 3
    t = read_trials(j)
    assert len(t) == 2 * 4 and t.manifest.trials == 4
    assert len(read_journal(j).records) == 8
    for args in (["report", str(j), "--k", "4"], ["gate", str(j), "--rule", "pass^1>=0.0"]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
    again_resumed = _run(j, "--resume", "-n", "4")  # nothing to add: no manifest line again
    assert again_resumed.exit_code == 0, again_resumed.output
    assert j.read_bytes().count(b'"type":"manifest"') == 2


def test_forked_range_readers_take_a_later_manifests_count(
    tmp_path: Path, own: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest line --resume -n wrote may fall in any reader's range: its count is
    joined with the rest (one pass and ranges read the same journal alike)."""
    j = _resumed(tmp_path, own)
    monkeypatch.setattr(ranges, "MIN_BYTES", 0)
    monkeypatch.setattr(ranges, "_single_threaded", lambda: True)
    monkeypatch.setenv("CHAOSEVAL_COLUMN_CACHE", "0")
    joined = []
    join = ranges._join
    monkeypatch.setattr(ranges, "_join", lambda *a: joined.append(join(*a)) or joined[-1])
    for workers in ("2", "3"):
        monkeypatch.setenv("CHAOSEVAL_READ_WORKERS", workers)
        joined.clear()
        t = read_trials(j)
        assert len(t) == 8 and t.manifest.trials == 4
        assert joined and all(x is not None for x in joined)  # read split, not again in one pass
