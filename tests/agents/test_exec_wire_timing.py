"""The held-out style check of the wire: an exec: agent times 150 requests to its own tool
hub and 150 to its own model channel. Functional assertions only (every request answered,
each timed, the trial judged as usual); the median is a figure of `make bench`
(benchmarks/bench_wire.py), never a timed assert."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.store.journal import read_journal

WIRE_AGENT = Path(__file__).resolve().parents[2] / "benchmarks" / "wire_agent.py"
N = 150


def test_an_exec_agent_times_150_requests_to_its_tool_hub_and_model_channel(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    args = ["run", "--agent", f"exec:{sys.executable} {WIRE_AGENT} time {N}",
            "-s", "vending-refund-not-dispensed", "--trials", "1", "--seed", "7",
            "--journal", str(path), "--no-report", "--no-progress"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    [record] = read_journal(path).records
    assert record.status == "passed", (record.root_cause, record.error)
    # The agent's own measurements, in its answer line (kept as the trial's stdout artifact).
    stdout = path.with_name(path.name + ".d") / record.trial_id / "stdout.txt"
    data = json.loads(stdout.read_text().strip().splitlines()[-1])["data"]
    for key in ("tools_ms", "model_ms"):
        assert len(data[key]) == N and all(ms > 0 for ms in data[key]), key
    # The wire channels measured their own share, which is part of the trial's time.
    assert record.channel_overhead is not None
    assert 0 < record.channel_overhead < record.wall_seconds
