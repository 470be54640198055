"""The A/B harness (`make bench AGAINST=REF`, benchmarks/run.py --against) runs: the tree's code
against HEAD's, alternating, prints each figure both ways from two measuring processes that
import different copies of chaoseval, and names a REF that is no commit. A tool for measuring:
this keeps it working and asserts no timing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "run.py"


def test_the_ab_harness_measures_each_figure_with_both_codes() -> None:
    args = [sys.executable, str(SCRIPT), "--against", "HEAD", "--rounds", "2", "--only", "request"]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    # Each side says where its chaoseval came from: the tree's, and HEAD's exported files laid
    # out as an install lays them (its scenarios inside its own chaoseval).
    assert f"the tree's code: {ROOT / 'chaoseval'}," in done.stdout, done.stdout
    exported = re.search(r"^  HEAD \(\w+\): (\S+)/chaoseval, scenarios (\S+)$", done.stdout, re.M)
    assert exported is not None, done.stdout
    assert exported[2] == f"{exported[1]}/chaoseval/bundled/scenarios"
    assert not exported[1].startswith(str(ROOT))
    row = r"^    (request path, .+?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+) \("
    rows = re.findall(row, done.stdout, re.M)
    assert [name for name, *_ in rows] == [
        "request path, forwarding one message (us)",
        "request path, forwarding turns 1-10 (us)",
        "request path, the sim's kind (us)",
    ], done.stdout
    assert all(float(a) > 0 and float(b) > 0 and float(r) > 0 for _, a, b, r in rows)


def test_a_ref_that_is_no_commit_is_named_with_the_fix() -> None:
    args = [sys.executable, str(SCRIPT), "--against", "no-such-ref-47"]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "--against no-such-ref-47: not a commit" in done.stderr and "HEAD~1" in done.stderr
