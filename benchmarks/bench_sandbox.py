"""What the exec: agents' sandbox costs (chaoseval.agents.sandbox): the same tiny exec: agent
run one trial at a time with ``--sandbox none`` and under bubblewrap, and the probe a run
makes once. Figures only."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

TRIALS = 20
REPEAT = 3


def _per_trial(mode: str) -> float:
    """Seconds per trial of a run of TRIALS exec: trials, one at a time, under ``mode``."""
    from bench_run import scenario

    from chaoseval.agents.process import ProcessAgent
    from chaoseval.engine.runner import RunConfig, run
    from chaoseval.errors import IsolationWarning

    agent = ProcessAgent([sys.executable, "-S", "-c", 'print(\'{"answer": "ok"}\')'])
    where = Path(tempfile.mkdtemp(prefix="chaoseval-bench-sandbox-"))
    config = RunConfig(
        scenarios=[scenario()],
        agent=agent,
        agent_name="exec:tiny",
        trials=TRIALS,
        seed=1,
        concurrency=1,
        journal=where / "bench.jsonl",
        references=False,
        executor="inprocess",
        keep_records=False,
        sandbox=mode,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolationWarning)  # --sandbox none says so: expected
        started = time.perf_counter()
        run(config)
        return (time.perf_counter() - started) / TRIALS


def main() -> None:
    from chaoseval.agents import sandbox

    box = sandbox.resolve("auto")
    if box.bwrap is None:
        print(f"exec: agents' sandbox: not measured ({box.note})")
        return
    sandbox.probe.cache_clear()
    started = time.perf_counter()
    sandbox.resolve("auto")
    probe = time.perf_counter() - started
    none = statistics.median(_per_trial("none") for _ in range(REPEAT))
    bwrap = statistics.median(_per_trial("auto") for _ in range(REPEAT))
    print(
        f"exec: agents' sandbox, {TRIALS} one-at-a-time trials of a tiny agent (median of "
        f"{REPEAT}): {none * 1e3:.1f} ms per trial with --sandbox none, {bwrap * 1e3:.1f} ms "
        f"under bubblewrap (+{(bwrap - none) * 1e3:.1f} ms); the probe, once per run: "
        f"{probe * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
