"""``compare`` says its conclusion first (issue 42, item 5): what happened in counts, then what
it means and how sure, before any table, in the terminal, Markdown and the HTML page
(``compare -f html``, the report's style, journal text escaped)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from typer.testing import CliRunner

from chaoseval.cli.app import app
from tests.analysis.test_compare_gate import TASKS, _journal

# A lone surrogate too: a journal's JSON can hold one ("\\ud800"), no UTF-8 file can.
HOSTILE = "naive <script>alert(1)</script> ]]> \ud800"


def _pair(tmp: Path, a_agent: str = "naive", task: str = "") -> tuple[str, str]:
    """B survives timeouts on 8 tasks, A on none; both perfect clean; A also ran ``task``."""

    def counts(passed: int, *more: str) -> dict[str, dict[str, tuple[int, int]]]:
        tasks = [*TASKS, *more]
        return {"clean": {t: (4, 4) for t in tasks}, "timeout": {t: (4, passed) for t in tasks}}

    more = [task] if task else []
    a = _journal(counts(0, *more), tmp / "a.jsonl", agent=a_agent.replace("\ud800", "SURROGATE"))
    a.path.write_text(a.path.read_text().replace("SURROGATE", "\\ud800"))
    b = _journal(counts(4), tmp / "b.jsonl", agent="resilient")
    return str(a.path), str(b.path)


def _run(*args: str) -> str:
    res = CliRunner().invoke(app, ["compare", *args, "--resamples", "300"], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    return res.output


def test_the_terminal_says_the_conclusion_before_any_table(tmp_path: Path) -> None:
    lines = _run(*_pair(tmp_path)).splitlines()
    assert lines[0] == (
        "resilient (B) against naive (A) on pass^1, paired by task: score in 2 cell(s): "
        "1 inconclusive, 1 improved; resilience under 1 perturbation(s): 1 improved."
    )
    # What happened, in counts: the trials each harness passed, then the cell's statuses.
    said = "clean A 32/32, B 32/32 passed B inconclusive (on tasks like these)"
    assert " ".join(lines[1].split()) == said
    assert " ".join(lines[2].split()).startswith("timeout A 0/32, B 32/32 passed B improved")
    assert lines[3] == (
        "What it means: resilient scores higher than naive in timeout, lower in no cell; "
        "against its own clean run it loses less than naive to timeout, more to none."
    )
    assert lines[4].startswith("Undecided: clean (score): neither a difference nor the absence")
    text = " ".join(" ".join(lines[5:]).split())  # the terminal wraps long lines
    assert text.startswith("How sure: improved and degraded (on tasks like these)")
    assert text.index("resilient is more resilient under timeout") < text.index("Scores of")
    assert not any(x.strip() == "conclusions" for x in lines)  # said once, at the top


def test_markdown_opens_with_the_conclusion(tmp_path: Path) -> None:
    lines = _run(*_pair(tmp_path), "-f", "markdown").splitlines()
    assert lines[:3] == ["# resilient (B) vs naive (A)", "", "## Conclusion"]
    assert (
        lines[4].startswith("**resilient (B) against naive (A) on pass^1")
        and "1 improved" in lines[4]
    )
    assert " ".join(lines[7].split()).startswith("- `timeout A 0/32, B 32/32 passed B improved")
    assert lines[9].startswith("- What it means: resilient scores higher than naive in timeout")
    table = lines.index("## Scores of resilient (B) and naive (A), paired by task, B - A (the "
                        "verdict is in the conclusion above: pass^1 only)")  # fmt: skip
    assert next(i for i, x in enumerate(lines) if x.startswith("How sure:")) < table


class _Page(HTMLParser):
    """The page's text and the ids of its sections and tables; every tag it opens."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.ids: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.ids += [v or "" for k, v in attrs if k == "id"]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_holds_the_conclusion_and_tables_with_journal_text_escaped(tmp_path: Path) -> None:
    task = "t-<script>alert(2)</script>]]>"
    out = tmp_path / "compare.html"
    _run(*_pair(tmp_path, HOSTILE, task), "-f", "html", "-o", str(out))
    raw = out.read_bytes().decode("utf-8")  # strictly UTF-8: the lone surrogate as its escape
    assert "<script" not in raw.lower() and "]]>" not in raw
    page = _Page()
    page.feed(raw)
    page.close()
    assert "script" not in page.tags
    assert page.ids[:2] == ["conclusion", "absolute"] and "table-resilience" in page.ids
    assert "table-budget" in page.ids
    text = "".join(page.text)
    shown = HOSTILE.replace("\ud800", "\\ud800")
    assert f"resilient (B) against {shown} (A) on pass^1" in text  # as written, never markup
    conclusion = " ".join(text[text.index("Conclusion") : text.index("Scores of")].split())
    assert "timeout A 0/32, B 32/32 passed B improved" in conclusion
    assert "What it means: resilient scores higher than" in conclusion
    assert "resilient is more resilient under timeout" in conclusion
    assert f"tasks only in {shown} (excluded from pairing): {task}" in text
