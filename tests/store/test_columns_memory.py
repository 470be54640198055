"""The memory of report, diverge and sample does not grow with the journal's size (issue 12).

Two synthetic journals of small records, 10k and 100k trials; each command (``report --format
json`` with the verdict and its twins, ``diverge --format json``, ``sample``) runs on each in
a fresh process, and the peak RSS of that process is compared. A reader that kept every record
(pydantic models, even of these small records) would add kilobytes per trial; the columns add a
few dozen bytes (diverge also keeps each failed trial's id and divergence: its output lists
them all).

The peak is the process's VmHWM, never ``ru_maxrss``: Linux carries the parent's peak over
fork and exec into the child's ru_maxrss, so under a big pytest process both sizes would read
pytest's peak and the ratio could not fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.store.journal_maker import write_journal

_CHILD = """
import sys
from chaoseval.cli.app import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    with open("/proc/self/status") as fh:
        hwm = next(line for line in fh if line.startswith("VmHWM:"))
    print("peak", int(hwm.split()[1]) * 1024, file=sys.stderr)
"""
SIZES = (10_000, 100_000)


def _peak(*args: str) -> int:
    res = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return int(res.stderr.split("peak")[-1].split()[0])


def _commands(journal: Path, out: Path) -> dict[str, list[str]]:
    return {
        "report": ["report", str(journal), "-f", "json", "-o", str(out), "--twins", "3"],
        "diverge": ["diverge", str(journal), "-f", "json", "-o", str(out)],
        "sample": ["sample", str(journal), "-n", "20", "--status", "any", "-o", str(out)],
    }


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
def test_memory_does_not_grow_with_the_journal(tmp_path: Path) -> None:
    peaks: dict[str, dict[int, int]] = {}
    for n in SIZES:
        journal = tmp_path / f"{n}.jsonl"
        write_journal(journal, n, tasks=50, cells=5, steps=1)
        for name, args in _commands(journal, out := tmp_path / f"{n}.out").items():
            peaks.setdefault(name, {})[n] = _peak(*args)
            assert out.stat().st_size > 1000
            out.unlink()
    for name, peak in peaks.items():
        small, big = (peak[n] for n in SIZES)
        per_trial = (big - small) / (SIZES[1] - SIZES[0])
        # Columns: ~0.2 KB a trial. Records (pydantic, even these one-step ones): several KB
        # (before they streamed, diverge and sample took 27 KB a trial of a bigger journal).
        assert per_trial < 400, f"{name}: {per_trial:.0f} bytes per trial; peaks {peak}"
    # The ratio, for report. diverge and sample start smaller (no scipy: ~60-80 MB
    # against report's ~130), so the same bytes a trial make a larger ratio (~1.4): their bound
    # is the one above.
    ratio = peaks["report"][SIZES[1]] / peaks["report"][SIZES[0]]
    assert ratio < 1.5, f"report: peak at 100k is {ratio:.2f}x the peak at 10k; {peaks}"
