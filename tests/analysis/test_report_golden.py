"""Every output of report, compare, summary and gate is what it was before reports streamed."""

from __future__ import annotations

import difflib
import gc
import io
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaoseval.store import colcache
from tests.analysis.report_golden import expected, outputs, unpack


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "lines"])
def test_outputs_identical_to_the_captured_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: bool
) -> None:
    """With the column cache (kept whatever the journal's size here), each journal's first
    command reads its lines, keeps them in the cache and takes them back from it as the others
    do; without it, every command holds the columns it read: both give the captured outputs."""
    monkeypatch.setattr(colcache, "MIN_BYTES", 0)
    if not cache:
        monkeypatch.setenv("CHAOSEVAL_COLUMN_CACHE", "0")
    want = expected()
    got = outputs(tmp_path)
    assert sorted(got) == sorted(want)
    for name in sorted(want):
        if got[name] != want[name]:
            diff = difflib.unified_diff(
                want[name].splitlines(), got[name].splitlines(), "captured", "now", lineterm=""
            )
            raise AssertionError(f"{name} changed:\n" + "\n".join(list(diff)[:60]))
    assert colcache.cache_file(tmp_path / "variant.jsonl").exists() == cache


def test_summary_holds_one_journal_at_a_time(tmp_path: Path) -> None:
    """print_summary lets each journal go before the next is read (a generator of read_trials:
    two 1M-trial journals at once were two journals' columns), with the table unchanged."""
    from rich.console import Console

    from chaoseval.render.summary import print_summary
    from chaoseval.store.columns import Trials, read_trials

    paths = unpack(tmp_path)
    alive: list[weakref.ref[Trials]] = []

    def journals() -> Iterator[Trials]:
        for name in ("naive", "resilient"):
            gc.collect()
            assert all(r() is None for r in alive), "the previous journal is still held"
            t = read_trials(paths[name])
            alive.append(weakref.ref(t))
            yield t
            del t  # as a generator expression holds nothing it yielded

    streamed, listed = (Console(file=io.StringIO(), width=200) for _ in range(2))
    print_summary(journals(), streamed)
    print_summary([read_trials(paths[n]) for n in ("naive", "resilient")], listed)
    assert streamed.file.getvalue() == listed.file.getvalue()  # type: ignore[attr-defined]
    assert "naive" in streamed.file.getvalue()  # type: ignore[attr-defined]
