"""Agent text in Markdown is text (issue 39, item 7): ``report -f markdown``, ``compare -f
markdown`` and ``sample`` once wrote an agent's answer, tool arguments, step errors and names as
raw Markdown and HTML, so a ``<script>``, an ``<img onerror>``, a link or an image, or a backtick
that closes a code span rendered where the report is read (a PR comment, a CI summary). Each
output is rendered here by a CommonMark renderer (markdown-it, as rich uses it) and must hold
the text as written and none of it as markup."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.investigate.replay import to_markdown
from chaoseval.render.printable import md_code, md_quote, md_text
from chaoseval.store.journal import read_journal

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"
LINK = "[click me](http://evil.example/a)"
IMAGE = "![pixel](http://evil.example/p.png)"
TICKS = "`x` ``` y"
INJECT = f"{SCRIPT} {IMG} {LINK} {IMAGE} {TICKS} | &amp; \\](http://evil.example/b)"

AGENT = f"""
from chaoseval.model.records import AgentOutput

INJECT = {INJECT!r}


class Hostile:
    clock = "virtual"

    async def run(self, episode):
        for tool, args in (("lookup_order", {{"order_id": INJECT}}), (INJECT, {{"q": INJECT}})):
            try:
                await episode.tools.call(tool, **args)
            except Exception:
                pass
        return AgentOutput(answer="answer: " + INJECT + "\\n## verdict: passed")


def make():
    return Hostile()
"""


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of an agent that writes the injections everywhere it can, in a cell named
    with them."""
    root = tmp_path_factory.mktemp("inject")
    (root / "inject_agent.py").write_text(AGENT)
    spec = root / "spec.json"
    cell = {"name": f"cell {IMG} {LINK}", "perturbations": [{"name": "latency"}]}
    spec.write_text(json.dumps(cell))
    path = root / "j.jsonl"
    out = CliRunner().invoke(
        app,
        ["run", "--agent", "inject_agent:make", "--app-dir", str(root), "-s",
         "vending-refund-not-dispensed", "-n", "2", "-p", str(spec), "--journal", str(path),
         "--no-progress"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    return path


def _html(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def _inert(html: str) -> None:
    """No element the agent's text could have made: only the renderer's own; the text shown
    as written (the cell's name is in every output)."""
    low = html.lower()
    assert "<script" not in low and "<img" not in low, html
    assert 'href="http://evil' not in low and 'src="http://evil' not in low, html
    assert "&lt;img src=x onerror=alert(2)&gt; [click me](http://evil.example/a)" in html, html


@pytest.mark.parametrize("command", ["report", "sample", "compare"])
def test_agent_text_in_markdown_renders_as_text(
    journal: Path, tmp_path: Path, command: str
) -> None:
    out = tmp_path / "out.md"
    args = {
        "report": ["report", str(journal), "-f", "markdown", "-o", str(out)],
        "sample": ["sample", str(journal), "--status", "any", "-n", "4", "-o", str(out)],
        "compare": ["compare", str(journal), str(journal), "-f", "markdown", "-o", str(out)],
    }[command]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    html = _html(out.read_text())
    _inert(html)
    if command == "sample":
        # The whole call, backticks and all, in one code span; the answer one quote, its
        # "## verdict" line quoted text, not a heading of the sheet.
        call = escape(f"lookup_order(order_id={INJECT!r})", quote=False)
        assert f"<code>{call}</code>" in html, html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, html
        assert "<h2>verdict: passed</h2>" not in html, html


def test_lone_surrogates_and_backticks_are_written_as_escapes(journal: Path) -> None:
    """A record whose answer and error hold a lone surrogate (an in-memory run's record:
    no journal holds one) gives a sheet that can be written as UTF-8."""
    j = read_journal(journal)
    r = j.records[0]
    answer = f"half \ud800 of a pair {TICKS}"
    error = "boom ```` \udfff"
    sheet = to_markdown([r.model_copy(update={"answer": answer, "error": error})], j)
    sheet.encode("utf-8")  # was: UnicodeEncodeError on write
    assert "\\ud800" in sheet and "\\udfff" in sheet
    html = _html(sheet)
    assert "<code>boom ```` \\udfff</code>" in html, html


@pytest.mark.parametrize("text", [INJECT, "a\nb", "\ud800", "`", "``a``", "x\\](y)"])
def test_each_form_keeps_the_text(text: str) -> None:
    """Rendered, each form shows exactly the text (controls and surrogates as escapes)."""
    shown = text.encode("utf-8", "backslashreplace").decode()
    for md, want in ((md_text(text), shown.replace("\n", " ")), (md_code(text), shown)):
        html = _html(md)
        assert "<script" not in html and "<img" not in html and "<a " not in html, html
        plain = MarkdownIt("commonmark").parseInline(md)[0].children or []
        got = "".join(t.content for t in plain)
        assert got.strip() == want.replace("\n", " ").strip(), (md, got)
    assert _html(md_quote(text)).startswith("<blockquote>")
