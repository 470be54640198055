"""Reference browser agents: Playwright driving Debian's Chromium on the trial's page server.

``browser-naive``, ``browser-resilient`` and ``browser-scripted`` (chaoseval.agents.browser_actor
says how each clicks) run the scenario's reference solution with a BrowserActor. One browser
per run (the agent's ``session``), a fresh browser context per trial, sized as the trial's
device (chaoseval.model.device), carrying the trial's time zone and, through Playwright's
clock, its time (timers keep running: late banners and slow
renders still fire). The page server (chaoseval.channels.browser) turns the page's clicks into
the trial's click tool calls, so policy, budgets, ledger and judge are the text channel's.

Evidence: a screenshot of each failed click and of the page at the end of the trial
(``final.png``), and with ``trace=True`` a Playwright trace (``trace.zip``), kept as trial
artifacts (``CHAOSEVAL_BROWSER_TRACE=1`` asks for traces from the command line). Scenarios
without a page run the same solution with tool calls only.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chaoseval.agents.actor import Actor, run_solution
from chaoseval.agents.browser_actor import BrowserActor, Style
from chaoseval.channels.browser.chromium import chromium
from chaoseval.channels.browser.server import serve_pages, trial_device
from chaoseval.errors import HarnessError
from chaoseval.model.records import AgentOutput
from chaoseval.seams.agent import Episode
from chaoseval.store import artifacts

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext


def timezone_id(episode: Episode) -> str:
    """The trial clock's UTC offset as an IANA zone Chromium knows (Etc/GMT signs are
    inverted); an offset that is not whole hours falls back to UTC (the time itself is set
    exactly through the page's clock)."""
    offset = episode.clock.nominal_now().utcoffset() or timedelta(0)
    hours, rest = divmod(int(offset.total_seconds()), 3600)
    if rest or hours == 0:
        return "UTC"
    return f"Etc/GMT{'-' if hours > 0 else '+'}{abs(hours)}"


class BrowserAgent:
    clock = "real"  # a browser lives on wall-clock time

    def __init__(self, style: Style, *, trace: bool = False):
        self.style: Style = style
        self.trace = trace
        self._browser: Browser | None = None

    @asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """One Chromium for every trial of the run."""
        async with chromium() as browser:
            self._browser = browser
            try:
                yield
            finally:
                self._browser = None

    async def run(self, episode: Episode) -> AgentOutput:
        solution = episode.reference
        if solution is None:
            raise HarnessError("the browser agents run the scenario's reference solution")
        if not episode.has_ui:
            return await run_solution(Actor(episode), solution)
        async with AsyncExitStack() as stack:
            browser = self._browser  # outside a run's session: a browser of its own
            if browser is None:
                browser = await stack.enter_async_context(chromium())
            url = await stack.enter_async_context(serve_pages(episode))
            # The trial's device: the scenario's, or the one the viewport perturbation drew.
            device = trial_device(episode).playwright()
            context = await browser.new_context(
                timezone_id=timezone_id(episode), locale="en-US", **device
            )
            stack.push_async_callback(context.close)
            if self.trace:
                await context.tracing.start(screenshots=True, snapshots=True)
                stack.push_async_callback(_keep_trace, context)
            page = await context.new_page()
            # Installed, not paused: the page's time is the trial's and its timers still run.
            await page.clock.install(time=episode.now())
            actor = BrowserActor(episode, page, url, self.style)
            stack.push_async_callback(actor.screenshot, "final.png")
            await actor.open()
            return await run_solution(actor, solution)
        raise AssertionError("unreachable")  # pragma: no cover - the block returns or raises


async def _keep_trace(context: BrowserContext) -> None:
    with tempfile.TemporaryDirectory(prefix="chaoseval-trace-") as tmp:
        path = Path(tmp) / "trace.zip"
        await context.tracing.stop(path=str(path))
        store = artifacts.current()
        if store is not None:
            store.write_bytes("trace.zip", path.read_bytes())


def _options(options: dict[str, Any]) -> dict[str, Any]:
    # On the command line a trace is asked for through the environment (--agent takes a name).
    return {"trace": os.environ.get("CHAOSEVAL_BROWSER_TRACE") == "1", **options}


def browser_scripted(**options: Any) -> BrowserAgent:
    return BrowserAgent("scripted", **_options(options))


def browser_naive(**options: Any) -> BrowserAgent:
    return BrowserAgent("naive", **_options(options))


def browser_resilient(**options: Any) -> BrowserAgent:
    return BrowserAgent("resilient", **_options(options))
