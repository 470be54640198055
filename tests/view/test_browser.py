"""``chaoseval view`` in real Chromium (Debian's, through Playwright): open a run, filter to a
failed trial, open it beside its clean twin, compare two runs, and watch a run being written
add trials. The trial page's screenshot is the one docs/VIEW.md shows (docs/img/view.png)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.view.conftest import Served, copy_runs

pytest.importorskip("playwright", reason="pip install 'chaoseval[browser]'")
from playwright.sync_api import Page, expect, sync_playwright

pytestmark = pytest.mark.slow

WAIT = 120_000  # ms: a loaded machine, two cores shared by many test runs
SHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "view.png"


@pytest.fixture
def page(chromium: Path) -> Iterator[Page]:
    from chaoseval.channels.browser.chromium import ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=ARGS)
        tab = browser.new_page(viewport={"width": 1200, "height": 760})
        tab.set_default_timeout(WAIT)
        expect.set_options(timeout=WAIT)
        yield tab
        browser.close()


def test_runs_trials_twins_compare_and_a_live_run_in_chromium(
    runs: Path, tmp_path: Path, serve: Callable[[Path], Served], page: Page
) -> None:
    root = copy_runs(runs, tmp_path / "view")
    written = (runs / "release-1" / "run.jsonl").read_bytes().splitlines(keepends=True)
    live = root / "live" / "now.jsonl"
    live.parent.mkdir()
    live.write_bytes(b"".join(written[:3]))  # the manifest and two trials so far
    view = serve(root)

    # The runs, each cell's status filled in after the page.
    page.goto(view.url + "/")
    expect(page.locator("#runs tbody tr")).to_have_count(3)
    release = page.locator("#runs tbody tr").filter(has_text="release-1/run.jsonl")
    expect(release).to_contain_text("timeout:")

    # A run: its trials, then the report's verdict below them.
    page.get_by_role("link", name="release-1/run.jsonl").click()
    expect(page.locator("#report section#verdict")).to_be_visible()

    # Filter to the failed trials: the filters are the URL.
    page.locator("#filters select[name=status]").select_option("failed")
    page.locator("#filters button[type=submit]").click()
    page.wait_for_url(re.compile(r"status=failed"))
    rows = page.locator("#trials tbody tr")
    expect(rows.first).to_be_visible()
    for text in rows.locator("td:nth-child(2)").all_inner_texts():
        assert text.strip() == "failed"

    # One failed trial beside its clean twin, the first divergence marked on both sides.
    rows.first.locator("a").click()
    page.wait_for_url(re.compile(r"/trial\?"))
    expect(page.locator("#divergence")).to_contain_text("First divergence")
    expect(page.locator("section#this .step.div")).to_have_count(1)
    expect(page.locator("section#clean h2")).to_contain_text("/clean/")
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOT))

    # Two runs compared, picked in the page.
    page.goto(view.url + "/")
    page.locator("#compare-form select[name=a]").select_option("release-1/run.jsonl")
    page.locator("#compare-form select[name=b]").select_option("release-2/run.jsonl")
    page.locator("#compare-form button[type=submit]").click()
    page.wait_for_url(re.compile(r"/compare\?a=release-1"))
    expect(page.locator("#statuses")).to_contain_text("timeout")
    expect(page.locator("#conclusions li").first).to_be_visible()

    # A run being written: its page gains trials as they land, without a reload.
    page.goto(view.url + "/run?j=live/now.jsonl")
    expect(page.locator("#count")).to_contain_text("2 of 2 trial(s)")
    with live.open("ab") as fh:
        fh.write(b"".join(written[3:6]))
    expect(page.locator("#count")).to_contain_text("5 of 5 trial(s)")
    expect(page.locator("#trials tbody tr")).to_have_count(5)
