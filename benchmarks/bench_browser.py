"""Browser trials per second: the UI tasks in real headless Chromium (one browser for the run,
a context per trial) at the run's default concurrency, for each browser agent, clean and under
the layout perturbations. Skipped, with the reason, when Chromium or Playwright is missing."""

from __future__ import annotations

import time

from chaoseval.channels.browser.chromium import ensure_chromium
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.seams.agent import load_agent

CELLS = ["layout_shift", "modal", "slow_render"]


def main(trials: int = 2) -> None:
    reason = ensure_chromium()
    try:
        import playwright  # noqa: F401
    except ImportError:
        reason = reason or "playwright is not installed"
    if reason is not None:
        print(f"browser trials: skipped ({reason})")
        return
    scenarios = select(installed(), ["tag:ui"])
    config = RunConfig(scenarios=scenarios, agent=load_agent("naive"), agent_name="-")
    print(
        f"browser trials: {len(scenarios)} UI tasks x (clean + {len(CELLS)} cells) x {trials}, "
        f"concurrency {config.concurrency} (the default), headless Chromium"
    )
    for name in ("browser-naive", "browser-resilient"):
        started = time.perf_counter()
        records = run(
            RunConfig(
                scenarios=scenarios,
                agent=load_agent(name),
                agent_name=name,
                cells=parse_cells(CELLS),
                trials=trials,
                seed=1,
                ks=[1],
                references=False,
            )
        ).records
        seconds = time.perf_counter() - started
        print(
            f"  {name:<20}{len(records)} trials in {seconds:6.1f} s: "
            f"{len(records) / seconds:5.2f} trials/s (browser launch included)"
        )


if __name__ == "__main__":
    main()
