"""CHAOSEVAL_TRACE_READ=1: each phase of a journal read printed to standard error, by the
reader and by each forked reader; nothing without it; the columns the same either way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chaoseval.store import ranges
from chaoseval.store.columns import read_trials
from tests.analysis.report_golden import unpack
from tests.store.test_colcache import _same

LINE = re.compile(
    r"\[read\] pid (\d+) wall +[\d.]+ cpu +[\d.]+ kids +[\d.]+"
    r"( on-cpu +[\d.]+ run-queue +[\d.]+ asleep +-?[\d.]+)?: (.+)"
)


def test_each_phase_of_a_split_read_is_printed_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(ranges, "MIN_BYTES", 0)
    monkeypatch.setattr(ranges, "_single_threaded", lambda: True)
    monkeypatch.setenv("CHAOSEVAL_COLUMN_CACHE", "0")
    monkeypatch.setenv("CHAOSEVAL_READ_WORKERS", "2")
    path = unpack(tmp_path)["resilient"]
    quiet = read_trials(path)
    assert capfd.readouterr().err == ""
    monkeypatch.setenv("CHAOSEVAL_TRACE_READ", "1")
    _same(read_trials(path), quiet)
    lines = capfd.readouterr().err.splitlines()
    found = [LINE.fullmatch(line) for line in lines]
    assert all(found), lines
    phases: dict[str, list[str]] = {}
    for m in found:
        assert m is not None
        phases.setdefault(m.group(1), []).append(m.group(3))
    assert len(phases) == 2  # the reader and the one it forked
    parent, reader = sorted(phases.values(), key=len, reverse=True)
    assert parent[0] == f"reading the lines of {path}"
    assert parent[1] == "split read: manifest read"
    assert parent[2].startswith("split read: 1 reader(s) forked, ranges from bytes [")
    assert parent[3:] == [
        "split read: its own range read",
        "split read: a reader joined (it ended)",
        "split read: its range joined to the columns",
        "columns built",
    ]
    assert reader == [
        "reader: forked",
        "reader: its range read",
        "reader: its range written for the parent",
    ]
