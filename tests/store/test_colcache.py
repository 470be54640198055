"""The column cache (store.colcache): a second read of a journal takes the columns kept beside
it, and never once the journal changed: grown, cut off then completed, rewritten, appended to
while it was read, or the cache damaged."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chaoseval.store import colcache, columns, lock
from chaoseval.store.builder import Builder
from chaoseval.store.columns import Trials, read_trials
from tests.analysis.report_golden import unpack


@pytest.fixture
def journals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The golden report journals (real runs; a variant with a re-run trial and a cut-off
    last line), cached whatever their size, written long enough ago to be kept."""
    monkeypatch.setattr(colcache, "MIN_BYTES", 0)
    paths = unpack(tmp_path)
    for p in paths.values():
        _age(p)
    return paths


def _age(path: Path) -> None:
    old = path.stat().st_mtime_ns - int(10 * 1e9)
    os.utime(path, ns=(old, old))


def _fresh(path: Path, monkeypatch: pytest.MonkeyPatch) -> Trials:
    with monkeypatch.context() as m:
        m.setenv("CHAOSEVAL_COLUMN_CACHE", "0")
        return read_trials(path)


def _same(a: Trials, b: Trials) -> None:
    """Every field equal, in the same order and with the same types."""
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "_codes":
            continue
        if f.name in ("col", "offsets"):
            xs, ys = (x, y) if f.name == "col" else ({"": x}, {"": y})
            assert list(xs) == list(ys)
            for k in xs:
                assert xs[k].dtype == ys[k].dtype, k
                assert np.array_equal(xs[k], ys[k], equal_nan=xs[k].dtype.kind == "f"), k
            continue
        assert x == y, f.name
        # A cache's columns and reference calls are read when first used (colcache.Lazy*).
        lazy = isinstance(x, colcache.LazyDict | colcache.LazyIndex) and isinstance(x, type(y))
        assert type(x) is type(y) or lazy, f.name
        if isinstance(x, dict):
            assert list(x) == list(y), f.name
            assert [_types(v) for v in x.values()] == [_types(v) for v in y.values()], f.name


def _types(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return (type(v), [_types(i) for i in v])
    return type(v)


def test_a_second_read_takes_the_cache_and_equals_the_first(
    journals: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("naive", "variant"):
        path = journals[name]
        first = read_trials(path)
        assert colcache.cache_file(path).exists(), name
        # Kept in the journal's store, with all else kept beside a journal: no other file.
        assert colcache.cache_file(path).parent == path.with_name(path.name + ".d")
        assert not [p for p in path.parent.iterdir() if p.name.endswith(".npz")]
        kept = colcache.load(path, path.stat())
        assert kept is not None and len(kept["offsets"]) == len(first)
        _same(read_trials(path), first)
        _same(first, _fresh(path, monkeypatch))
    variant = journals["variant"]
    assert read_trials(variant).cut_off_line is not None
    # Named otherwise than when it was cached, its warnings name it as it is named now.
    again = read_trials(Path(os.path.relpath(variant)))
    assert again.warnings == [w.replace(str(variant), os.path.relpath(variant))
                              for w in first.warnings] != first.warnings  # fmt: skip


def test_a_cache_is_read_as_far_as_it_is_used(journals: dict[str, Path]) -> None:
    """A command holds the columns it reads, not all of them, and decodes the reference calls
    only when it measures against them (process metrics)."""
    path = journals["naive"]
    first = read_trials(path)
    # The read that kept the cache takes its columns back from it, as the next one does.
    assert isinstance(first.col, colcache.LazyColumns) and dict.__len__(first.col) == 0
    assert dict.__len__(first.errors) == 0 and dict.__len__(first.refs) == 0
    t = read_trials(path)
    assert isinstance(t.col, colcache.LazyColumns)
    assert dict.__len__(t.col) == 0 and len(t.col) == len(columns.NUMERIC) + len(columns.CODED)
    status = t.col["status"]
    assert dict.__len__(t.col) == 1 and t.col.get("status") is status and "seed" in t.col
    assert t.col.get("nothing") is None and "nothing" not in t.col
    with pytest.raises(KeyError):
        t.col["nothing"]
    assert dict.__len__(t.refs) == 0 and t.references is not None
    calls = t.references.calls
    # Which scenarios have reference calls is known without decoding the calls.
    sids = list(calls)
    assert sids and sids[0] in calls and len(calls) == len(sids) and t.references.steps
    assert dict.__len__(t.refs) == 0 and dict.__len__(calls) == 0
    assert all(t.refs[sid] is c for sid, c in calls.items())
    # Errors and veto items too, decoded when first read.
    assert dict.__len__(t.errors) == 0 and dict.__len__(t.vetoes) == 0
    assert t.errors and t.vetoes and dict.__len__(t.vetoes) == len(t.vetoes)



def test_repeated_errors_and_veto_items_are_held_once(
    journals: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read from the lines or from the cache, rows with the same error or veto item share one
    string (a 1M-trial journal repeats a few dozen errors over ~400k rows)."""
    path = journals["naive"]
    for t in (_fresh(path, monkeypatch), read_trials(path), read_trials(path)):
        errors = list(t.errors.values())
        items = [item for vs in t.vetoes.values() for item in vs]
        assert len(set(errors)) < len(errors) and len(set(items)) < len(items)
        assert len({id(e) for e in errors}) == len(set(errors))
        assert len({id(i[1]) for i in items}) == len({i[1] for i in items})


def test_a_journal_that_grew_or_was_completed_is_read_again(
    tmp_path: Path, journals: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = journals["naive"].read_bytes()
    lines = whole.splitlines(keepends=True)
    path = tmp_path / "growing.jsonl"
    n = len(lines) // 2
    half = b"".join(lines[:n])
    # Cut off mid-line, then the line completed, then the rest appended: each read sees the
    # journal as it is then.
    for data in (half + lines[n][:50], half + lines[n], whole):
        path.write_bytes(data)
        _age(path)
        t = read_trials(path)
        assert colcache.cache_file(path).exists()
        _same(t, _fresh(path, monkeypatch))
    assert len(read_trials(path)) == len(lines) - 1


def test_a_rewrite_of_the_same_size_is_read_again(
    journals: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = journals["naive"]
    before = read_trials(path)
    data = path.read_bytes()
    changed = data.replace(b'"status":"passed"', b'"status":"failed"', 1)
    assert len(changed) == len(data) and changed != data
    path.write_bytes(changed)
    _age(path)  # a later time than the cached one all the same
    after = read_trials(path)
    assert int(after.col["status"].sum()) == int(before.col["status"].sum()) + 1
    _same(after, _fresh(path, monkeypatch))


def test_a_journal_appended_to_while_it_is_read_is_not_cached(
    journals: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = journals["naive"]
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-5]))
    _age(path)
    add = Builder.add
    appended: list[bool] = []

    def appending(self: Any, r: Any, offset: int) -> None:  # a writer's lines land mid-read
        if not appended:
            with path.open("ab") as fh:
                fh.write(b"".join(lines[-5:]))
            appended.append(True)
        add(self, r, offset)

    monkeypatch.setattr(Builder, "add", appending)
    read_trials(path)
    assert not colcache.cache_file(path).exists()
    monkeypatch.setattr(Builder, "add", add)
    assert len(read_trials(path)) == len(lines) - 1


_WRITER = """
import sys
from pathlib import Path
from chaoseval.store.lock import JournalLock
lock = JournalLock(Path(sys.argv[1]))
lock.acquire()
print("held", flush=True)
sys.stdin.read()
lock.release()
"""


def test_a_journal_a_run_holds_is_read_without_waiting_and_not_cached(
    journals: dict[str, Path],
) -> None:
    """Everything kept beside a journal is kept only while no writer holds its lock (issue
    47); a reader asks without taking the lock, so it neither waits nor keeps a run out."""
    path = journals["naive"]
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "held"
        assert lock.writing(path)
        assert len(read_trials(path)) > 0
        assert not colcache.cache_file(path).exists()
    finally:
        assert writer.stdin is not None
        writer.stdin.close()
        writer.wait()
    assert not lock.writing(path)
    read_trials(path)
    assert colcache.cache_file(path).exists()


def test_a_journal_written_just_now_is_not_cached(journals: dict[str, Path]) -> None:
    path = journals["naive"]
    path.write_bytes(path.read_bytes())
    read_trials(path)
    assert not colcache.cache_file(path).exists()


def test_a_damaged_or_foreign_cache_is_ignored(
    journals: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    naive, resilient = journals["naive"], journals["resilient"]
    read_trials(resilient)
    cache = colcache.cache_file(naive)
    cache.parent.mkdir(exist_ok=True)  # the journal's store, where its cache is kept
    cache.write_bytes(colcache.cache_file(resilient).read_bytes())  # another journal's
    _same(read_trials(naive), _fresh(naive, monkeypatch))
    cache.write_bytes(cache.read_bytes()[:1000])  # cut short
    _same(read_trials(naive), _fresh(naive, monkeypatch))
    read_trials(naive)
    assert colcache.load(naive, naive.stat()) is not None
    monkeypatch.setattr(colcache, "_digest", "another version's code")
    assert colcache.load(naive, naive.stat()) is None
