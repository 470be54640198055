"""The viewport perturbation and the accessibility tree in real headless Chromium: the
trial's context gets the drawn device, the page lays out narrow from its first paint and
reports it, naive's desktop selectors miss the collapsed controls where resilient opens the
menu, and the page server's accessibility rendering (GET a11y) is Playwright's aria snapshot
of the live page, renamed labels included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from chaoseval.agents.browser import BrowserAgent, timezone_id
from chaoseval.channels.browser.chromium import chromium as launch
from chaoseval.channels.browser.server import serve_pages, trial_device
from chaoseval.engine.runner import RunConfig, RunResult, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.seams.agent import Episode

pytestmark = pytest.mark.slow

REFUND = "ui-refund-admin"
MOBILE = "viewport:sizes=[mobile]"
APPLIED = """() => window.__chaoseval.applied.length >=
  JSON.parse(document.getElementById("chaoseval-config").textContent).ops.length"""


def _run(agent: Any, cells: list[str]) -> RunResult:
    return run(
        RunConfig(
            scenarios=select(installed(), [REFUND]),
            agent=agent,
            agent_name="b",
            cells=parse_cells(cells),
            trials=1,
            seed=5,
            references=False,
        )
    )


def test_naive_misses_the_collapsed_menu_resilient_opens_it(chromium: Path) -> None:
    outcome = {}
    for style in ("naive", "resilient"):
        result = _run(BrowserAgent(style), [MOBILE])  # type: ignore[arg-type]
        record = next(r for r in result.records if r.cell != "clean")
        (fault,) = record.trajectory.faults
        # delivered by the page's beacon, laid out at the phone's width (meta viewport honoured)
        assert fault.delivered and fault.detail["rendered_width"] == 390, fault.detail
        outcome[style] = (record.status, record.root_cause)
        assert next(r for r in result.records if r.cell == "clean").status == "passed"
    assert outcome == {
        "naive": ("failed", "control_in_collapsed_menu"),
        "resilient": ("passed", None),
    }


class Probe:
    """Opens the page as a browser agent does and reads its device and accessibility tree."""

    clock = "real"

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def run(self, episode: Episode) -> str:
        async with launch() as browser, serve_pages(episode) as url:
            device = trial_device(episode)
            context = await browser.new_context(
                timezone_id=timezone_id(episode), **device.playwright()
            )
            page = await context.new_page()
            await page.goto(url)
            await page.wait_for_function(APPLIED)
            live = await page.locator("body").aria_snapshot()
            async with httpx.AsyncClient() as client:
                served = (await client.get(url + "device")).json()
                text = (await client.get(url + "a11y")).text
            self.seen.append(
                {
                    "screen": await page.evaluate(
                        "[innerWidth, devicePixelRatio, navigator.maxTouchPoints > 0]"
                    ),
                    "device": device,
                    "served": served,
                    "live": "\n".join(x for x in live.splitlines() if x.strip() != "- status"),
                    "text": text,
                }
            )
            await context.close()
        return "looked"


def test_the_device_and_the_accessibility_tree_in_chromium(chromium: Path) -> None:
    probe = Probe()
    _run(probe, [f"layout_shift:banner=null,relabel=1+{MOBILE}"])
    by_device = {seen["device"].name: seen for seen in probe.seen}
    clean, shifted = by_device["desktop"], by_device["mobile"]
    assert clean["screen"] == [1280, 1, False]
    assert shifted["screen"] == [390, 3, True]
    assert shifted["served"]["playwright"]["is_mobile"] is True
    for seen in probe.seen:  # one UI, two renderings, read as an accessibility tree too
        assert seen["live"] == seen["text"]
    assert '- button "Approve refund"' in clean["live"]
    assert '- button "Approve refund"' not in shifted["live"]
    assert '- button "More actions"' in shifted["live"]


def test_every_bundled_page_reads_the_same_as_chromium_reads_it(chromium: Path) -> None:
    """engine.a11y against Playwright's aria_snapshot() on each UI page, desktop and narrow."""
    import asyncio

    from chaoseval.engine.a11y import aria_snapshot
    from chaoseval.engine.domops import collapse, menu_plans

    pages = []
    for scenario in (s for s in installed() if s.ui):
        givens = scenario.build(1)[1]
        page = str(givens.get("_ui_page") or (scenario.ui or "").format(**givens))
        pages += [page, collapse(page, menu_plans(page, 3), {})]

    async def read() -> list[str]:
        async with launch() as browser:
            tab = await browser.new_page()
            out = []
            for page in pages:
                await tab.set_content(page)
                out.append(await tab.locator("body").aria_snapshot())
            return out

    assert len(pages) >= 20
    assert asyncio.run(read()) == [aria_snapshot(page) for page in pages]
