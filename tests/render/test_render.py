"""Report formats: Markdown, self-contained HTML (inline SVG), JUnit XML, JSON, terminal."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.analysis.build import analyze
from chaoseval.analysis.verdict import build_verdict
from chaoseval.cli.app import app
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.render import render_html, render_markdown
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import Journal, read_journal

runner = CliRunner()


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Journal:
    path = tmp_path_factory.mktemp("render") / "naive.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-*"]),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(["timeout", "latency"]),
            trials=3,
            seed=7,
            ks=[1, 3],
            journal=path,
        )
    )
    return read_journal(path)


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.unbalanced: list[str] = []

    VOID = frozenset({"meta", "br", "img", "input", "link", "hr", "col"})

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        else:
            self.unbalanced.append(tag)


def test_html_is_self_contained_with_plots_and_tables(journal: Journal) -> None:
    a = analyze(journal, n_resamples=300)
    html = render_html(a, verdict=build_verdict(a, journal.records))
    p = _Collect()
    p.feed(html)
    assert p.unbalanced == [] and p.stack == []
    tags = [t for t, _ in p.tags]
    # Offline: no script, no external stylesheet, image or font.
    assert "script" not in tags and "link" not in tags and "img" not in tags
    ids = {attrs.get("id") for _, attrs in p.tags}
    for _, attrs in p.tags:
        # Links only inside the page (the table of contents, the clean twins), each to an id.
        assert "src" not in attrs
        href = attrs.get("href")
        assert href is None or (href.startswith("#") and href[1:] in ids), href
    assert not re.search(r"url\(|@import|https://", html)
    svgs = {attrs.get("id") for t, attrs in p.tags if t == "svg"}
    panels = {f"plot-passk-{i}" for i in range(len(a.perturbed))}  # one svg per perturbation
    assert svgs == {"plot-heatmap", "plot-rootcauses", *panels} and "plot-passk" in ids
    tables = {attrs.get("id") for t, attrs in p.tags if t == "table"}
    assert {"table-summary", "table-degradation", "table-vetoes", "table-process"} <= tables
    # One pass^k panel per perturbation, each with the clean series beside it.
    series = [attrs.get("data-cell") for t, attrs in p.tags if t == "polyline"]
    assert sorted(series) == ["clean", "clean", "latency", "timeout"]
    # The heatmap has a rectangle per scenario x perturbation.
    heat = [1 for t, attrs in p.tags if t == "rect" and attrs.get("class") in ("heat", "heat sig")]
    assert len(heat) == len(a.scenarios) * len(a.perturbed)
    # Stacked bars: the trials of each cell add up across its segments.
    bars = re.findall(r"<title>([^<:]+): [^<]* (\d+) of (\d+)</title>", html)
    for cell in (c.cell for c in a.cells):
        parts = [(int(n), int(t)) for name, n, t in bars if name == cell]
        assert sum(n for n, _ in parts) == parts[0][1]


def test_html_escapes_text(journal: Journal) -> None:
    a = analyze(journal, n_resamples=100, references=False)
    a.warnings.append("<script>alert(1)</script>")
    html = render_html(a)
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_markdown_tables(journal: Journal) -> None:
    a = analyze(journal, n_resamples=300, references=False)
    md = render_markdown(a)
    assert md.startswith("# chaoseval report: naive")
    for title in ("Reliability per cell", "Degradation against clean", "Veto items", "Process"):
        assert f"## {title}" in md
    rows = [line for line in md.splitlines() if line.startswith("| timeout |")]
    assert rows, md
    # Every table row has as many cells as its header.
    blocks = re.findall(r"(\| .+ \|\n\|[-|]+\|\n(?:\|.*\|\n)+)", md)
    assert len(blocks) >= 5
    for block in blocks:
        lines = block.strip().splitlines()
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in lines if not line.startswith("|-")}
        assert len(widths) == 1, block


def test_report_cli_formats(journal: Journal, tmp_path: Path) -> None:
    j = str(journal.path)
    for fmt, name in (("html", "r.html"), ("markdown", "r.md"), ("junit", "r.xml")):
        # --twins 0: every failed trial laid out beside its clean twin.
        res = runner.invoke(
            app, ["report", j, "-f", fmt, "-o", str(tmp_path / name), "--twins", "0"]
        )
        assert res.exit_code == 0, res.output
        assert (tmp_path / name).stat().st_size > 500
    res = runner.invoke(app, ["report", j, "-f", "json"])
    doc = json.loads(res.output)
    # Existing fields are kept; the analysis is added beside them.
    assert doc["schema_version"] == 1
    first = doc["perturbations"][0]
    for key in ("name", "tasks", "trials", "not_evaluable", "mean", "pass_at", "pass_hat"):
        assert key in first
    assert set(first["pass_hat"]) == {"1", "3"}
    assert "delta_pass_hat" in doc["perturbations"][1] and doc["cells"]
    assert set(doc["analysis"]["degradation"]) == {"timeout", "latency"}
    assert [c["cell"] for c in doc["verdict"]["cells"]] == ["timeout", "latency"]
    # Counts first (issue 41), and every cell's status in cells[].status.
    statuses = {c["cell"]: c["status"] for c in doc["verdict"]["cells"]}
    counted = ", ".join(
        f"{n} {w}" for w, n in doc["verdict"]["statuses"].items() if n
    )
    assert doc["verdict"]["summary"][0].startswith(counted + " of 2 perturbed cell(s)")
    assert set(statuses) == {"timeout", "latency"}
    res = runner.invoke(app, ["report", j])
    assert res.exit_code == 0
    assert "Degradation against clean" in res.output and "Noise floor" in res.output
    # The verdict comes first; changes that are not significant are marked.
    assert res.output.index("Verdict:") < res.output.index("pass^3") and "(n.s.)" in res.output
    res = runner.invoke(app, ["report", j, "--twins", "-1"])
    assert res.exit_code == 2 and "--twins" in res.output
    res = runner.invoke(app, ["report", j, "-f", "pdf"])
    assert res.exit_code == 2 and "unknown --format" in res.output


def test_terminal_progress_counts_every_trial(tmp_path: Path) -> None:
    """The runner reports through RunProgress; the terminal bar lives in render/."""
    import io

    from rich.console import Console

    from chaoseval.render.progress import TerminalProgress

    out = io.StringIO()
    result = run(
        RunConfig(
            scenarios=select(installed(), ["vending-refund-dispensed"]),
            agent=load_agent("naive"),
            agent_name="naive",
            trials=3,
            seed=7,
            progress=TerminalProgress(Console(file=out, force_terminal=True, width=120)),
        )
    )
    text = out.getvalue()
    statuses = [r.status for r in result.records]
    final = (
        f"pass {statuses.count('passed')} fail {statuses.count('failed')} "
        f"n/e {statuses.count('not_evaluable')}"
    )
    assert "naive" in text and "3/3" in text and final in text


def test_only_render_and_cli_import_rich() -> None:
    """Every terminal output is drawn in render/ (and the CLI's own messages in cli/)."""
    import ast

    import chaoseval

    root = Path(chaoseval.__file__).parent
    for path in root.rglob("*.py"):
        if path.relative_to(root).parts[0] in ("render", "cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not [n for n in names if n.split(".")[0] == "rich"], f"{path} imports rich"


def test_the_heatmap_draws_the_largest_changes_past_its_row_limit(
    journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite of 100k tasks drew 100k heatmap rows (~100 MB of SVG); past HEATMAP_ROWS the
    heatmap draws the scenarios whose change is largest and says how many it left out."""
    from chaoseval.render import svg

    a = analyze(journal, n_resamples=100, references=False)
    assert len(a.scenarios) > 2
    monkeypatch.setattr(svg, "HEATMAP_ROWS", 2)
    drawn = svg.heatmap(a)

    def change(sc: str) -> float:
        values = [a.heatmap.get((sc, c)) for c in a.perturbed]
        return max((abs(v) for v in values if v is not None), default=-1.0)

    want = sorted(sorted(a.scenarios, key=lambda sc: (-change(sc), sc))[:2])
    rows = re.findall(r"<title>([^<]+) / ", drawn)
    assert sorted(set(rows)) == want and len(rows) == 2 * len(a.perturbed)
    assert f"2 of {len(a.scenarios)} scenarios" in drawn
