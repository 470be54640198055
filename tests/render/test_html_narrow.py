"""Issue 21 point 9: the HTML report on an 800 px wide screen, in real headless Chromium.

The page must not scroll sideways, the reliability table must show its last column (it was cut
after pass^5) and the plots' labels must be readable (the heatmap's, then the pass^k panels' and
the root-cause bars', were scaled down with their drawing to about 7 px). The screenshot is kept
beside the test's other files (tmp_path) for a look.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaoseval.analysis.build import analyze
from chaoseval.analysis.verdict import build_verdict
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.render import render_html
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import read_journal

pytestmark = pytest.mark.slow

WIDTH = 800
MEASURE = """() => {
  const page = document.documentElement;
  const table = document.querySelector('#table-summary');
  const box = table.parentElement;
  const last = table.querySelector('thead th:last-child').getBoundingClientRect();
  const size = t => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a;
  const labels = [...document.querySelectorAll('#plot-heatmap text')].map(size);
  const plots = {};
  for (const id of ['plot-passk', 'plot-rootcauses']) {
    const texts = [...document.querySelectorAll(`#${id} text`)].map(size);
    plots[id] = {texts: texts.length, smallest: Math.min(...texts)};
  }
  return {
    scrollWidth: page.scrollWidth, clientWidth: page.clientWidth,
    lastColumn: last.right, lastColumnText: table.querySelector('thead th:last-child').textContent,
    boxScrolls: box.scrollWidth > box.clientWidth,
    labels: labels.length, smallestLabel: Math.min(...labels), plots,
  };
}"""


def measure(report: Path, shot: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from chaoseval.channels.browser.chromium import ARGS, CHROMIUM

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
            page.goto(report.as_uri())
            got: dict[str, Any] = page.evaluate(MEASURE)
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    return got


def test_the_report_fits_an_800_px_screen(chromium: Path, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-*", "ui-*", "calendar-*"]),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(["latency", "timeout", "layout_shift", "stale_memory"]),
            trials=5,
            seed=7,
            ks=[1, 2, 5],
            journal=path,
        )
    )
    journal = read_journal(path)
    a = analyze(journal, n_resamples=200)
    report = tmp_path / "report.html"
    report.write_text(render_html(a, verdict=build_verdict(a, journal.records)), encoding="utf-8")

    shot = tmp_path / "report-800px.png"
    got = measure(report, shot)
    assert shot.stat().st_size > 10_000  # the screenshot, kept in tmp_path
    assert got["scrollWidth"] <= got["clientWidth"], got  # no sideways scroll
    # The reliability table whole: its last column on screen, its box not scrolled.
    assert "absorbed" in got["lastColumnText"], got
    assert got["lastColumn"] <= got["clientWidth"] and not got["boxScrolls"], got
    assert got["labels"] > 20 and got["smallestLabel"] >= 11 - 1e-6, got
    # The pass^k panels and the root-cause bars at their drawing size: axis ticks 10 px.
    for plot, seen in got["plots"].items():
        assert seen["texts"] > 10 and seen["smallest"] >= 10 - 1e-6, (plot, got)
