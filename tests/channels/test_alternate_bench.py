"""benchmarks/alternate.py runs: a variant patching a function with itself, two rounds, prints
each kind's tree -> patched figures (the script is a tool for measuring; this keeps it working,
and asserts no timing)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANT = """\
from chaoseval.channels.model.channel import TrialModelChannel
PATCHES = [(TrialModelChannel, "finish", TrialModelChannel.finish)]
"""


def test_the_alternating_bench_measures_each_kind_both_ways(tmp_path: Path) -> None:
    variant = tmp_path / "same.py"
    variant.write_text(VARIANT)
    script = ROOT / "benchmarks" / "alternate.py"
    done = subprocess.run([sys.executable, str(script), str(variant), "2"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^  (.+?)\s+([\d.]+) ->\s+([\d.]+)\s+\(([+-][\d.]+)\)$", done.stdout, re.M)
    assert [name for name, *_ in rows] == [
        "forwarding, one message", "forwarding, turns 1-10", "the sim's kind",
    ], done.stdout  # fmt: skip
    assert all(float(a) > 0 and float(b) > 0 for _, a, b, _ in rows)


def test_run_without_a_variant_it_prints_its_usage(tmp_path: Path) -> None:
    script = ROOT / "benchmarks" / "alternate.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode != 0 and "VARIANT.py" in done.stderr
