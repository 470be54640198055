"""Every output of report, compare, summary and gate is what it was before reports streamed."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from chaoseval.store import colcache
from tests.analysis.report_golden import expected, outputs


def test_outputs_identical_to_the_captured_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each journal's first command reads its lines; the others its column cache (kept
    whatever the journal's size here), so both give the captured outputs."""
    monkeypatch.setattr(colcache, "MIN_BYTES", 0)
    want = expected()
    got = outputs(tmp_path)
    assert sorted(got) == sorted(want)
    for name in sorted(want):
        if got[name] != want[name]:
            diff = difflib.unified_diff(
                want[name].splitlines(), got[name].splitlines(), "captured", "now", lineterm=""
            )
            raise AssertionError(f"{name} changed:\n" + "\n".join(list(diff)[:60]))
    assert colcache.cache_file(tmp_path / "variant.jsonl").exists()
