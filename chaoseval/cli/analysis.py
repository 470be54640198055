"""``chaoseval report`` (every format), ``chaoseval compare`` and ``chaoseval gate``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer
from rich.console import Console

from chaoseval import redact
from chaoseval.cli._common import ConfigPath, console, err, fail, settings
from chaoseval.errors import ChaosevalError, ConfigError
from chaoseval.render.printable import escape, visible

if TYPE_CHECKING:
    from chaoseval.analysis.build import Analysis
    from chaoseval.store.columns import Trials

FORMATS = ("table", "json", "markdown", "html", "junit")


def load(
    path: Path, source: str | None = None, scorer: str | None = None, errors_as: str = "source"
) -> Trials:
    """A chaoseval journal, or (with ``source``) a tau-bench / Inspect AI results file, as
    columns (a journal is read line by line; its trajectories are read again only for the
    trials a view shows)."""
    from chaoseval.store.columns import as_trials, read_trials
    from chaoseval.store.importers import load_source

    if source is None:
        return read_trials(path)
    return as_trials(load_source(source, path, scorer=scorer, errors_as=errors_as))


# With --from: how a trial that crashed before it was scored counts (store/importing.py).
ErrorsAs = Annotated[
    str,
    typer.Option(
        "--errors-as",
        help="with --from, crashed trials count as the source benchmark counts them (source), "
        "apart from the score (not-evaluable), or as failures (failure)",
    ),
]


def _emit(text: str, output: Path | None, what: str) -> None:
    # Standard output is as much a place things are written (`> report.md`, a CI log) as -o:
    # both get the redactor, and both get control characters as visible escapes, so a
    # Markdown or HTML report shown with `cat` cannot drive the terminal either.
    text = visible(redact.redact(text))
    if output is None:
        print(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    Console(stderr=True).print(f"wrote {what} to {output}")


class _Shown:
    """A stream that writes what it is given as :func:`_emit` writes a whole text: redacted,
    control characters as visible escapes (piece by piece, as redact.RedactingStream does)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        return self.inner.write(visible(redact.redact(text)))


def _stream(write: Callable[[TextIO], None], output: Path | None, what: str) -> None:
    """What ``write`` writes, printed or written to ``output`` as :func:`_emit` does."""
    if output is None:
        write(_Shown(sys.stdout))  # type: ignore[arg-type]
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", encoding="utf-8") as fh:
        write(_Shown(fh))  # type: ignore[arg-type]
    Console(stderr=True).print(f"wrote {what} to {output}")


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
    ks = _check_ks(data, k)
    a = analyze(data, ks, n_resamples=resamples, references=source is None, margin=margin)
    phase("report: analysed")
    if format == "junit":
        _emit(render_junit(data, a), output, "JUnit XML")
        return
    v = build_verdict(a, data, twins or None)
    release(data)  # the columns the writing below reads are read again (analysis.aggregate)
    if format == "table" and output is None:
        print_report(data, console, ks, a, v)
        print_analysis(a, console, v.labels)
        _recorded_gate(journal, data)
        return
    if format == "json":
        doc = json_report(data, ks, a.cells if a.ks == ks else None, lists=Streamed)
        doc["analysis"] = analysis_json(a, lists=Streamed)
        doc["verdict"] = verdict_json(v)
        _stream(lambda out: write_json(doc, out), output, "JSON report")
        phase("report: written")
    elif format == "markdown":
        _emit(render_markdown(a, v), output, "Markdown report")
    elif format == "html":
        from chaoseval.render.html import render_html

        _emit(render_html(a, verdict=v), output, "HTML report")
    else:  # table into a file
        with output.open("w", encoding="utf-8") as fh:  # type: ignore[union-attr]
            stream = redact.RedactingStream(fh)
            file_console = Console(file=stream, width=180)  # type: ignore[arg-type]
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


def check_margin(margin: float) -> None:
    if not 0 < margin < 1:
        raise ConfigError(f"--margin {margin:g}: use a drop between 0 and 1, e.g. 0.1")


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


def _check_ks(
    data: Trials, k: list[int] | None, wanted: set[int] | None = None, asking: str = "rules ask for"
) -> list[int]:
    """The k values a view reports: refused, as run and gate refuse them, when a k exceeds
    the trials per cell (pass^k of 20 out of 8 trials is not a measurement, not a dash)."""
    ks = sorted(set(k or data.manifest.ks) | (wanted or set()))
    bad = [x for x in ks if x < 1]
    if bad:
        raise ConfigError(f"--k {bad}: k must be >= 1")
    trials = _trials_per_cell(data)
    too_big = [x for x in ks if trials and x > trials]
    if too_big:
        asked = asking if wanted and set(too_big) & wanted else "--k asks for"
        raise ConfigError(
            f"{asked} k = {too_big} but {data.path.name} has {trials} trials per cell; "
            f"pass^k needs k <= trials: use k <= {trials}"
        )
    return ks


def _trials_per_cell(data: Trials) -> int:
    """The most trials any cell holds: the manifest's count, or more where ``--resume -n``
    added trials to the run (its manifest keeps the first invocation's count)."""
    index = data.col.get("index")
    seen = int(index.max()) + 1 if index is not None and len(index) else 0
    return max(data.manifest.trials or 0, seen)


def compare_cmd(
    a: Annotated[Path, typer.Argument(help="journal of harness A (the baseline)")],
    b: Annotated[Path, typer.Argument(help="journal of harness B")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="table | markdown | json")
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
    from chaoseval.analysis.compare_status import judge_comparison, regression_exit, status_lines
    from chaoseval.analysis.primary import parse_primary
    from chaoseval.render.comparison import print_comparison, render_comparison_markdown

    try:
        ja, jb = load(a, source, errors_as=errors_as), load(b, source, errors_as=errors_as)
        _check_pairable(ja, jb)
        # The metric that decides must be measurable in both, as --k must (a pass^9 of two
        # trials was "no detectable difference" where it is not a measurement at all).
        wanted = {parse_primary(primary, where="--primary").kk} if primary else None
        for t in (ja, jb):
            _check_ks(t, k, wanted, "--primary asks for")
        check_margin(margin)
        h = compare_journals(ja, jb, k, n_resamples=resamples, seed=seed, primary=primary)
        statuses = judge_comparison(h, ja, jb, margin)
        lines = status_lines(statuses)
        if format == "table":
            for line in lines:
                console.print(escape(line), highlight=False)
            print_comparison(h, console)
        elif format == "markdown":
            head = "".join(f"- `{line}`\n" for line in lines)
            _emit(head + "\n" + render_comparison_markdown(h), output, "comparison")
        elif format == "json":
            doc = {**h.to_json(), "statuses": statuses}
            _emit(json.dumps(doc, indent=2), output, "comparison")
        else:
            raise ConfigError(f"unknown --format {format!r}; use table, markdown or json")
    except ChaosevalError as exc:
        fail(exc)
    if fail_on_regression and (code := regression_exit(statuses, allow_inconclusive)):
        raise typer.Exit(code)


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
        code = judge(
            journal or cfg.default_journal(), rule or cfg.gate or [], perturbation or [], k,
            source=source, errors_as=errors_as, junit=junit, resamples=resamples,
            margin=margin, allow_inconclusive=allow_inconclusive,
        )  # fmt: skip
    except ChaosevalError as exc:
        fail(exc)
    if code:
        raise typer.Exit(code)


def judge(
    path: Path,
    rules: list[str],
    perturbation: list[str],
    k: list[int] | None,
    *,
    source: str | None = None,
    errors_as: str = "source",
    junit: Path | None = None,
    resamples: int = 2_000,
    margin: float = 0.1,
    allow_inconclusive: bool = False,
) -> int:
    """What ``gate`` (and ``run`` with gate rules) prints and its exit code: the rules, or
    without any the cells' statuses (chaoseval.analysis.status)."""
    from chaoseval.analysis.build import analyze
    from chaoseval.analysis.gate import evaluate, exit_code, parse_rule
    from chaoseval.render.junit import render_junit

    check_margin(margin)
    parsed = [parse_rule(r) for r in rules]
    data = load(path, source, errors_as=errors_as)
    ks = _check_ks(data, k, {r.k for r in parsed if r.k is not None})
    a = analyze(data, ks, n_resamples=resamples, references=False, margin=margin)
    for w in data.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    if not parsed:
        return _judge_statuses(data, a, junit, allow_inconclusive)
    results = evaluate(a, parsed, perturbation)
    for r in results:
        style = "green" if r.passed else "yellow" if r.undecided else "bold red"
        console.print(f"[{style}]{escape(r.message())}[/]", highlight=False, soft_wrap=True)
    if junit is not None:
        _emit(render_junit(data, a, results), junit, "JUnit XML")
    broken = [r for r in results if r.broken]
    undecided = [r for r in results if r.undecided]
    code = exit_code(bool(broken), bool(undecided), allow_inconclusive)
    if broken:
        console.print(
            f"[bold red]gate failed:[/] {len(broken)} of {len(results)} rule(s) broken: "
            + escape("; ".join(f"{r.rule.text} (measured {r.detail})" for r in broken)),
            highlight=False,
            soft_wrap=True,
        )
    elif undecided:
        console.print(
            f"[bold yellow]gate undecided:[/] {len(undecided)} of {len(results)} rule(s) could "
            "not be decided: " + escape("; ".join(f"{r.rule.text} ({r.detail})" for r in undecided))
            + (" (--allow-inconclusive: exit 0)" if allow_inconclusive else ""),
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(f"[green]gate passed:[/] {len(results)} rule(s)")
    return code


def _judge_statuses(data: Trials, a: Analysis, junit: Path | None, allow: bool) -> int:
    """No rule given: any broken or degraded cell fails, an inconclusive one (or a journal with
    nothing evaluable) is undecided."""
    from chaoseval.analysis.gate import exit_code
    from chaoseval.analysis.verdict import build_verdict
    from chaoseval.render.junit import render_junit
    from chaoseval.render.verdict import print_verdict

    v = build_verdict(a, data, 0)
    print_verdict(v, console)
    if junit is not None:
        _emit(render_junit(data, a), junit, "JUnit XML")
    failing = v.count("broken") + v.count("degraded")
    undecided = v.count("inconclusive") or not v.evaluable
    code = exit_code(bool(failing), bool(undecided), allow)
    if failing:
        console.print(f"[bold red]gate failed:[/] {failing} cell(s) broken or degraded")
    elif undecided:
        console.print(
            "[bold yellow]gate undecided:[/] "
            + ("no evaluable trial" if not v.evaluable else f"{undecided} cell(s) inconclusive")
            + (" (--allow-inconclusive: exit 0)" if allow else "")
        )
    else:
        console.print(f"[green]gate passed:[/] {len(v.cells)} cell(s), none broken or degraded")
    return code


def _recorded_gate(path: Path, data: Trials) -> None:
    """The gate ``run`` applied (its rules are in the manifest), judged as run judged it: the
    same lines, no exit code (a report reports)."""
    rules = data.manifest.gate if data.manifest is not None else None
    if rules:
        console.print(
            "[bold]Gate[/] (the rules the run applied, as recorded in the journal):",
            highlight=False,
        )
        judge(path, rules, [], None)


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
    app.command("compare")(compare_cmd)
    app.command("gate")(gate_cmd)
