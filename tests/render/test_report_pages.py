"""The HTML report of a big run lists a bounded number of failed trials per cell (each one is
read again from the journal with its clean twin); --twins 0 still lists every one."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.render.verdict import LISTED
from tests.store.journal_maker import write_journal


def _listing(page: str) -> tuple[str, list[str]]:
    """The one perturbed cell's listing: its summary and its rows, links to the laid-out
    cards taken out (--twins 0 links every row)."""
    ((summary, body),) = re.findall(r"<details><summary>(.*?)</summary>(.*?)</details>", page)
    rows = re.findall(r"<tr><td>(.*?)</tr>", body)
    return summary, [re.sub(r"</?a[^>]*>", "", row) for row in rows]


def _page(journal: Path, out: Path, *twins: str) -> str:
    res = CliRunner().invoke(app, ["report", str(journal), "-f", "html", "-o", str(out), *twins])
    assert res.exit_code == 0, res.output
    return out.read_text()


def test_html_lists_a_bounded_number_of_failures_per_cell(tmp_path: Path) -> None:
    journal = tmp_path / "big.jsonl"
    write_journal(journal, 1200, tasks=4, cells=2, steps=1)  # ~280 failures in the latency cell
    summary, rows = _listing(page := _page(journal, tmp_path / "a.html"))
    every_summary, every = _listing(_page(journal, tmp_path / "b.html", "--twins", "0"))
    failed = len(every)
    assert failed > LISTED
    assert every_summary.endswith(f"with its clean twin ({failed})")
    assert len(rows) == LISTED
    assert rows == every[:LISTED]  # the same trials, in the same order, with the same labels
    assert summary.startswith(f"The first {LISTED} of the {failed} failed trials")
    assert f"{failed - LISTED} more are not listed here" in page
    assert page.count("class='twin-card'") == 3  # laid out: --twins' default


def test_html_lists_a_bounded_number_of_failed_browser_trials(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from chaoseval.analysis.browser import BrowserFailure, BrowserView
    from chaoseval.render.browser import LISTED as SHOTS
    from chaoseval.render.browser import browser_failures_html

    failures = [
        BrowserFailure(f"ui/modal/{i}", "modal", "timeout", f"x/{i}.png") for i in range(250)
    ]
    a = SimpleNamespace(browser=BrowserView([], failures), journal=str(tmp_path / "run.jsonl"))
    page = browser_failures_html(a)  # type: ignore[arg-type]  # the two fields it reads
    assert page.count("ui/modal/") == SHOTS
    assert f"{250 - SHOTS} more failed browser trial(s)" in page and "run.jsonl.d/" in page
