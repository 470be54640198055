"""A journal read in byte ranges by forked readers (store.ranges) gives what one pass gives:
the same columns, codes, side tables, sums and warnings, and the same error naming the same
line when a range holds a bad one."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from chaoseval.errors import ConfigError, JournalError
from chaoseval.store import ranges
from chaoseval.store.columns import Trials, _builder, read_trials
from tests.analysis.report_golden import unpack
from tests.store.test_colcache import _same


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every journal split (no size floor, no column cache); each range joined is counted."""
    monkeypatch.setattr(ranges, "MIN_BYTES", 0)
    monkeypatch.setenv("CHAOSEVAL_COLUMN_CACHE", "0")
    joined: list[bool] = []
    join = ranges._join

    def counted(*args: Any) -> Any:
        got = join(*args)
        joined.append(got is not None)
        return got

    monkeypatch.setattr(ranges, "_join", counted)
    # Tests before may have left an idle thread (model.world's rmtree reaper): the readers
    # run only the reader's code, which takes no lock such a thread holds.
    monkeypatch.setattr(ranges, "_single_threaded", lambda: True)
    return joined


def _one_pass(path: Path, monkeypatch: pytest.MonkeyPatch) -> Trials:
    with monkeypatch.context() as m:
        m.setenv("CHAOSEVAL_READ_WORKERS", "1")
        return read_trials(path)


@pytest.mark.parametrize("workers", ["2", "3"])
def test_ranges_read_as_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: list[bool], workers: str
) -> None:
    # The golden journals: real runs; the variant has a re-run trial (its two lines in
    # different ranges) and a cut-off last line (named by its number in the whole file).
    for name, path in unpack(tmp_path).items():
        one = _one_pass(path, monkeypatch)
        monkeypatch.setenv("CHAOSEVAL_READ_WORKERS", workers)
        split.clear()
        _same(read_trials(path), one)
        assert split == [True] * (int(workers) - 1), name
    assert one.cut_off_line is not None and one.warnings


def test_a_journal_replaced_mid_read_is_read_whole_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: list[bool]
) -> None:
    paths = unpack(tmp_path)
    path, other = paths["naive"], paths["resilient"]
    one = _one_pass(path, monkeypatch)
    bounds = ranges._bounds

    def replaced(*args: Any) -> Any:  # after the manifest was read, before the readers start
        os.replace(other, path)
        return bounds(*args)

    monkeypatch.setattr(ranges, "_bounds", replaced)
    monkeypatch.setenv("CHAOSEVAL_READ_WORKERS", "3")
    _same(read_trials(path), one)
    assert split == [True, True]


def _bad_json(lines: list[bytes]) -> None:
    lines[-3] = lines[-3][:40] + b"}\n"


def _foreign(lines: list[bytes]) -> None:
    d = json.loads(lines[-3])
    d["run_id"] = "another"
    lines[-3] = json.dumps(d).encode() + b"\n"


def _twice(lines: list[bytes]) -> None:
    d = json.loads(lines[2])  # a trial of the first range recorded again in the last
    d["status"] = "failed" if d["status"] == "passed" else "passed"
    lines.append(json.dumps(d).encode() + b"\n")


@pytest.mark.parametrize("damage", [_bad_json, _foreign, _twice])
def test_a_bad_line_in_a_later_range_is_named_as_one_pass_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: list[bool], damage: Any
) -> None:
    path = unpack(tmp_path)["naive"]
    lines = path.read_bytes().splitlines(keepends=True)
    damage(lines)
    path.write_bytes(b"".join(lines))
    with pytest.raises(JournalError) as one:
        _one_pass(path, monkeypatch)
    monkeypatch.setenv("CHAOSEVAL_READ_WORKERS", "2")
    with pytest.raises(JournalError) as again:
        read_trials(path)
    assert str(again.value) == str(one.value)
    assert f"{path}:" in str(one.value)
    assert split  # it was split: the range's reader failed, or the error came after joining


def test_a_reader_that_dies_mid_write_hands_the_journal_to_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: list[bool]
) -> None:
    """A reader killed while it writes its range (half its columns written): the parent
    reads the journal in one pass, to the same result."""
    path = unpack(tmp_path)["naive"]
    one = _one_pass(path, monkeypatch)
    send = ranges._send

    def dies(out: Any, *args: Any) -> None:
        send(out, *args)
        out.flush()
        out.truncate(out.tell() // 2)
        os._exit(9)

    monkeypatch.setattr(ranges, "_send", dies)
    monkeypatch.setenv("CHAOSEVAL_READ_WORKERS", "2")
    _same(read_trials(path), one)
    assert split == [False]


def test_no_split_beside_another_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = unpack(tmp_path)["naive"]
    monkeypatch.setattr(ranges, "MIN_BYTES", 0)
    monkeypatch.setenv("CHAOSEVAL_READ_WORKERS", "2")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not ranges._single_threaded()
        assert ranges.read_split(path, _builder(path)) is None
    finally:
        stop.set()
        other.join()


@pytest.mark.parametrize("told", ["0", "two", "-1"])
def test_a_bad_worker_count_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, told: str) -> None:
    monkeypatch.setenv("CHAOSEVAL_READ_WORKERS", told)
    with pytest.raises(ConfigError, match="CHAOSEVAL_READ_WORKERS"):
        ranges.workers()
