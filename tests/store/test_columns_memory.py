"""The memory of a report does not grow with the journal's size (issue 12).

Two synthetic journals of small records, 10k and 100k trials, each reported (``report
--format json``, the verdict and its twins included) in a fresh process; the peak RSS of the
process is compared. A reader that kept every record (pydantic models, even of these small
records) would add kilobytes per trial; the columns add a few dozen bytes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.store.journal_maker import write_journal

_CHILD = """
import resource, sys
from chaoseval.cli.app import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    print("peak", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, file=sys.stderr)
"""


def _peak(*args: str) -> int:
    res = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return int(res.stderr.split("peak")[-1].split()[0])


@pytest.mark.slow
def test_report_memory_does_not_grow_with_the_journal(tmp_path: Path) -> None:
    peaks = {}
    for n in (10_000, 100_000):
        journal = tmp_path / f"{n}.jsonl"
        write_journal(journal, n, tasks=50, cells=5, steps=1)
        out = tmp_path / f"{n}.json"
        peaks[n] = _peak("report", str(journal), "-f", "json", "-o", str(out), "--twins", "3")
        assert out.stat().st_size > 1000
    per_trial = (peaks[100_000] - peaks[10_000]) / 90_000
    ratio = peaks[100_000] / peaks[10_000]
    # Columns: ~0.1 KB a trial. Records (pydantic, even these one-step ones): several KB.
    assert per_trial < 400, f"{per_trial:.0f} bytes per trial; peaks {peaks}"
    assert ratio < 1.5, f"peak at 100k is {ratio:.2f}x the peak at 10k; peaks {peaks}"
