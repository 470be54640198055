"""A process agent (``exec:``) written with plain Playwright opens CHAOSEVAL_UI_URL and acts
on the page; its clicks reach the world through the trial's click tool."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from chaoseval.agents.process import ProcessAgent
from chaoseval.channels.browser.chromium import ARGS, CHROMIUM
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells

pytestmark = pytest.mark.slow

AGENT = f"""
import json, os, re, time
from playwright.sync_api import sync_playwright

with sync_playwright() as p:
    browser = p.chromium.launch(executable_path={str(CHROMIUM)!r}, args={ARGS!r})
    page = browser.new_page()
    page.goto(os.environ["CHAOSEVAL_UI_URL"])
    request = re.search(r"RQ-\\d+", page.locator("h2").first.inner_text()).group(0)
    # A dialog may open after load (a late modal): dismiss what is there, try the click,
    # and on a refused click, or a click a dialog opening just then took (no approval
    # follows), look for a dialog again. How late the dialog opens, and how long a click
    # takes, depend on the machine's load, so no attempt's outcome rests on them: it tries
    # until the trial's own deadline is near (it was 6 attempts).
    approved = page.get_by_role("status").filter(has_text="approved")
    deadline = float(os.environ["CHAOSEVAL_DEADLINE"]) - 10
    while not approved.count():
        if time.time() > deadline:
            raise SystemExit("no approval before the trial's deadline")
        for name in ("Accept all", "Accept cookies", "Got it", "No thanks", "Not now",
                     "Stay signed in", "Continue session", "Close", "Dismiss"):
            button = page.get_by_role("dialog").get_by_role("button", name=name)
            if button.count():
                button.first.click()
                page.get_by_role("dialog").wait_for(state="detached")
        try:
            page.get_by_role("button", name="Approve refund").click(timeout=2000)
            approved.wait_for(timeout=10000)
        except Exception:
            pass  # refused, or taken by a dialog: look again
    browser.close()
print(json.dumps({{"answer": f"Approved refund request {{request}}."}}))
"""


def test_a_plain_playwright_process_clicks_into_the_world(chromium: Path, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    result = run(
        RunConfig(
            scenarios=select(installed(), ["ui-refund-admin"]),
            agent=ProcessAgent(command),
            agent_name="exec:" + command,
            cells=parse_cells(["modal"]),
            trials=1,
            seed=5,
            ks=[1],
            references=False,
            # A bound on a hang, not a pace to keep (the scenario allows 60 s): the trial
            # ends when the agent exits, and a loaded machine may start Chromium slowly.
            wall_timeout=300,
        )
    )
    for record in result.records:
        assert record.status == "passed", (record.cell, record.error)
        clicks = [s for s in record.trajectory.tool_steps() if s.tool == "click"]
        assert clicks and clicks[-1].result_class == "ok"
        assert all(f.delivered for f in record.trajectory.faults)
    assert {r.cell for r in result.records} == {"clean", "modal"}
