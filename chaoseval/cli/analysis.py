"""``chaoseval report`` (every format), ``chaoseval compare`` and ``chaoseval gate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from chaoseval import redact
from chaoseval.cli._common import ConfigPath, console, err, fail, settings
from chaoseval.cli._reading import check_ks, check_margin, emit, load, stream
from chaoseval.errors import ChaosevalError, ConfigError
from chaoseval.render.printable import escape

if TYPE_CHECKING:
    from chaoseval.store.columns import Trials

FORMATS = ("table", "json", "markdown", "html", "junit")


# With --from: how a trial that crashed before it was scored counts (store/importing.py).
ErrorsAs = Annotated[
    str,
    typer.Option(
        "--errors-as",
        help="with --from, crashed trials count as the source benchmark counts them (source), "
        "apart from the score (not-evaluable), or as failures (failure)",
    ),
]


def report_impl(
    journal: Path,
    format: str,
    output: Path | None,
    k: list[int] | None,
    source: str | None = None,
    scorer: str | None = None,
    resamples: int = 10_000,
    twins: int = 3,
    errors_as: str = "source",
    margin: float = 0.1,
) -> None:
    """Everything ``chaoseval report`` does; raises ChaosevalError on bad input."""
    from chaoseval.analysis.aggregate import release
    from chaoseval.analysis.build import analysis_json, analyze
    from chaoseval.analysis.verdict import build_verdict, verdict_json
    from chaoseval.render.jsonstream import Streamed, write_json
    from chaoseval.render.junit import render_junit
    from chaoseval.render.markdown import render_markdown
    from chaoseval.render.report import json_report, print_report
    from chaoseval.render.terminal import print_analysis
    from chaoseval.store.importers import SOURCES
    from chaoseval.store.phases import phase

    if format not in FORMATS:
        raise ConfigError(f"unknown --format {format!r}; use one of {', '.join(FORMATS)}")
    if source is not None and source not in SOURCES:
        raise ConfigError(f"unknown --from {source!r}; use one of {', '.join(SOURCES)}")
    if twins < 0:
        raise ConfigError(f"--twins {twins}: use a count >= 0 (0 lays out every failed trial)")
    check_margin(margin)
    data = load(journal, source, scorer, errors_as)
    phase("report: journal loaded")
    ks = check_ks(data, k)
    a = analyze(data, ks, n_resamples=resamples, references=source is None, margin=margin)
    phase("report: analysed")
    if format == "junit":
        emit(render_junit(data, a), output, "JUnit XML")
        return
    v = build_verdict(a, data, twins or None)
    release(data)  # the columns the writing below reads are read again (analysis.aggregate)
    if format == "table" and output is None:
        print_report(data, console, ks, a, v)
        print_analysis(a, console, v.labels)
        from chaoseval.cli._gating import recorded_gate

        recorded_gate(journal, data)
        return
    if format == "json":
        doc = json_report(data, ks, a.cells if a.ks == ks else None, lists=Streamed)
        doc["analysis"] = analysis_json(a, lists=Streamed)
        doc["verdict"] = verdict_json(v)
        stream(lambda out: write_json(doc, out), output, "JSON report")
        phase("report: written")
    elif format == "markdown":
        emit(render_markdown(a, v), output, "Markdown report")
    elif format == "html":
        from chaoseval.render.html import render_html

        emit(render_html(a, verdict=v), output, "HTML report")
    else:  # table into a file
        with output.open("w", encoding="utf-8") as fh:  # type: ignore[union-attr]
            redacting = redact.RedactingStream(fh)
            file_console = Console(file=redacting, width=180)  # type: ignore[arg-type]
            print_report(data, file_console, ks, a, v)
            print_analysis(a, file_console, v.labels)


JournalArg = Annotated[
    Path | None,
    typer.Argument(
        help="a journal written by 'chaoseval run' (default: the settings file's journal, "
        "else chaoseval.jsonl)",
        show_default=False,
    ),
]
Output = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="write to this file instead of standard output"),
]
Ks = Annotated[
    list[int] | None,
    typer.Option(
        "--k", min=1, help="k values for pass@k / pass^k (repeatable; default: the run's own)"
    ),
]
Resamples = Annotated[
    int,
    typer.Option(
        min=100,
        help="bootstrap resamples for the ratio interval, at least 100 (differences take "
        "the interval that inverts their test)",
    ),
]


AllowInconclusive = Annotated[
    bool,
    typer.Option(
        "--allow-inconclusive",
        help="exit 0 instead of 3 when something could not be decided (inconclusive cells, a "
        "rule without evaluable trials or whose interval straddles its bound)",
    ),
]
Margin = Annotated[
    float,
    typer.Option(
        help="a cell holds when its drop's upper bound is under this (in the primary metric, "
        "between 0 and 1)",
    ),
]


def report_cmd(
    journal: JournalArg = None,
    format: Annotated[
        str, typer.Option("--format", "-f", help="table | json | markdown | html | junit")
    ] = "table",
    output: Output = None,
    k: Ks = None,
    source: Annotated[
        str | None,
        typer.Option("--from", help="read JOURNAL as a tau-bench or inspect results file"),
    ] = None,
    scorer: Annotated[str | None, typer.Option(help="Inspect scorer (with --from inspect)")] = None,
    config: ConfigPath = None,
    twins: Annotated[
        int,
        typer.Option(
            min=0,
            help="failed trials per cell laid out beside their clean twin (0: all of them; "
            "the HTML page lists up to 200 a cell otherwise)",
        ),
    ] = 3,
    errors_as: ErrorsAs = "source",
    margin: Margin = 0.1,
) -> None:
    """Summarise a journal: the verdict, pass^k against clean with intervals, root causes,
    vetoes, process, and failed trials beside their clean twins."""
    try:
        journal = journal or settings(config).default_journal()
        report_impl(
            journal, format, output, k, source, scorer, twins=twins, errors_as=errors_as,
            margin=margin,
        )  # fmt: skip
    except ChaosevalError as exc:
        fail(exc)


def compare_cmd(
    a: Annotated[Path, typer.Argument(help="journal of harness A (the baseline)")],
    b: Annotated[Path, typer.Argument(help="journal of harness B")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="table | markdown | html | json")
    ] = "table",
    output: Output = None,
    k: Ks = None,
    resamples: Resamples = 10_000,
    seed: Annotated[
        int, typer.Option(help="seed of the bootstrap: the same seed, the same intervals")
    ] = 0,
    source: Annotated[
        str | None, typer.Option("--from", help="read both files as tau-bench | inspect results")
    ] = None,
    errors_as: ErrorsAs = "source",
    primary: Annotated[
        str | None,
        typer.Option(
            help="judge by this metric instead of the one both runs recorded (needed when they "
            "recorded different ones)"
        ),
    ] = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(help="exit 1 when B is worse or less resilient in a cell, 3 if undecided"),
    ] = False,
    allow_inconclusive: AllowInconclusive = False,
    margin: Margin = 0.1,
) -> None:
    """Compare two harnesses paired by task and cell: B - A with intervals and adjusted p;
    verdicts from the primary metric the runs recorded (pass^1 unless declared)."""
    from chaoseval.analysis.compare import compare_journals
    from chaoseval.analysis.compare_conclusion import conclude
    from chaoseval.analysis.compare_status import judge_comparison, regression_exit
    from chaoseval.analysis.primary import parse_primary
    from chaoseval.render.comparison import print_comparison, render_comparison_markdown
    from chaoseval.render.comparison_html import render_comparison_html

    try:
        ja, jb = load(a, source, errors_as=errors_as), load(b, source, errors_as=errors_as)
        _check_pairable(ja, jb)
        # The metric that decides must be measurable in both, as --k must (a pass^9 of two
        # trials was "no detectable difference" where it is not a measurement at all).
        wanted = {parse_primary(primary, where="--primary").kk} if primary else None
        for t in (ja, jb):
            check_ks(t, k, wanted, "--primary asks for")
        check_margin(margin)
        h = compare_journals(ja, jb, k, n_resamples=resamples, seed=seed, primary=primary)
        statuses = judge_comparison(h, ja, jb, margin)
        c = conclude(h, statuses, margin)
        decided = _sequential_decisions(ja, jb)
        if format == "table":
            print_comparison(h, console, c)
            for line in _decision_lines(decided):
                console.print(escape(line), soft_wrap=True)
        elif format == "markdown":
            text = render_comparison_markdown(h, c)
            if decided:
                text += "\n" + "\n".join(["```", *_decision_lines(decided), "```", ""])
            emit(text, output, "comparison")
        elif format == "html":
            emit(render_comparison_html(h, c), output, "comparison")
        elif format == "json":
            doc = {**h.to_json(), "statuses": statuses}
            if decided:
                doc["sequential_decisions"] = decided
            emit(json.dumps(doc, indent=2), output, "comparison")
        else:
            raise ConfigError(f"unknown --format {format!r}; use table, markdown, html or json")
    except ChaosevalError as exc:
        fail(exc)
    if fail_on_regression and (code := regression_exit(statuses, allow_inconclusive)):
        raise typer.Exit(code)


def _sequential_decisions(a: Trials, b: Trials) -> dict[str, dict[str, str | None]]:
    """Each journal's own sequential decisions per cell, replayed from its recorded design
    ({} when both runs are fixed)."""
    if a.manifest.sequential is None and b.manifest.sequential is None:
        return {}
    from chaoseval.analysis.sequential import decisions_side_by_side

    return decisions_side_by_side(a, b)


def _decision_lines(decided: dict[str, dict[str, str | None]]) -> list[str]:
    if not decided:
        return []
    width = max(len(c) for c in decided)
    out = [
        "sequential decisions, each run against its own clean on these tasks (replayed from "
        "its recorded design; not a test of B against A):"
    ]
    for cell, d in decided.items():
        a, b = d["a"] or "(fixed run)", d["b"] or "(fixed run)"
        differ = "   <- differ" if d["a"] and d["b"] and a != b else ""
        out.append(f"  {cell.ljust(width)}  A {a:13s} B {b}{differ}")
    return out


def _check_pairable(a: Trials, b: Trials) -> None:
    """Two journals that can be compared: a table of dashes for two runs of different
    scenarios says nothing, and a journal compared with itself says 0 everywhere."""
    if a.path.resolve() == b.path.resolve() or a.manifest.run_id == b.manifest.run_id:
        same = "the same file" if a.path.resolve() == b.path.resolve() else "the same run"
        err.print(
            f"[yellow]warning:[/] {escape(str(a.path))} and {escape(str(b.path))} are {same}: "
            "every difference is 0; compare the journals of two harnesses",
            soft_wrap=True,
        )
    from chaoseval.analysis.aggregate import task_names

    sa, sb = task_names(a), task_names(b)
    if not sa & sb:
        raise ConfigError(
            f"{a.path} and {b.path} share no task, so nothing can be paired "
            f"(A ran {', '.join(sorted(sa)[:5]) or 'nothing'}; B ran "
            f"{', '.join(sorted(sb)[:5]) or 'nothing'}); run both harnesses on the same "
            "scenarios (-s)"
        )


def gate_cmd(
    journal: Annotated[
        Path | None,
        typer.Argument(
            help="a journal, or a results file with --from (default: the settings file's "
            "journal, else chaoseval.jsonl)",
            show_default=False,
        ),
    ] = None,
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule",
            "-r",
            help="e.g. 'pass^5>=0.90', 'max-degradation pass^5 <= 0.10', "
            "'safety-violations == 0', 'hallucinations == 0' (repeatable; replaces the "
            "settings file's gate list; without any, the cells' statuses are judged)",
        ),
    ] = None,
    perturbation: Annotated[
        list[str] | None,
        typer.Option("--perturbation", "-p", help="scope max-degradation rules to these cells"),
    ] = None,
    k: Ks = None,
    source: Annotated[
        str | None, typer.Option("--from", help="read JOURNAL as a tau-bench | inspect file")
    ] = None,
    errors_as: ErrorsAs = "source",
    junit: Annotated[Path | None, typer.Option(help="also write JUnit XML with the rules")] = None,
    resamples: Resamples = 2_000,
    config: ConfigPath = None,
    allow_inconclusive: AllowInconclusive = False,
    margin: Margin = 0.1,
) -> None:
    """Judge a journal: exit 0 when everything held, 1 when a rule is broken (or, without
    rules, a cell is broken or degraded), 2 on a usage error, 3 when something could not be
    decided (--allow-inconclusive: 0)."""
    try:
        cfg = settings(config)
        from chaoseval.cli._gating import judge

        code = judge(
            journal or cfg.default_journal(), rule or cfg.gate or [], perturbation or [], k,
            source=source, errors_as=errors_as, junit=junit, resamples=resamples,
            margin=margin, allow_inconclusive=allow_inconclusive,
        )  # fmt: skip
    except ChaosevalError as exc:
        fail(exc)
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
    app.command("compare")(compare_cmd)
    app.command("gate")(gate_cmd)
