"""Investigation commands: ``search``, ``diverge``, ``replay`` and ``sample``."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from chaoseval import redact
from chaoseval.cli._common import (
    AppDir,
    ConfigPath,
    ScenarioPaths,
    clock_notice,
    console,
    err,
    fail,
    load_scenarios,
    project_app_dir,
    project_scenario_paths,
    select_scenarios,
    user_agent,
)
from chaoseval.errors import ChaosevalError, ConfigError
from chaoseval.loading.userpath import append_path
from chaoseval.render.printable import escape, visible

if TYPE_CHECKING:
    from collections.abc import Iterable

    from chaoseval.investigate.search import SearchResult
    from chaoseval.model.records import RunManifest, TrialRecord
    from chaoseval.model.scenario import Scenario
    from chaoseval.model.trajectory import Step
    from chaoseval.store.journal import Journal


def _hits(result: SearchResult) -> str:
    """Where the confirmed schedule's faults landed: 'timeout on lookup_order x20'."""
    where: Counter[str] = Counter()
    for r in result.confirmation.records:
        for f in r.trajectory.faults:
            if not f.delivered:
                continue
            step = r.trajectory.steps[f.step] if f.step is not None else None
            target = f" on {step.tool}" if step is not None and step.tool else ""
            where[f"{f.perturbation}/{f.kind}{target}"] += 1
    return ", ".join(f"{k} x{v}" for k, v in where.most_common()) or "none delivered"


def _print_find(result: SearchResult, agent: str, seed: int) -> None:
    """The shrunk schedule, how it was found and confirmed, and where its faults landed."""
    conf = result.confirmation
    console.print(f"[bold]minimal failing schedule[/] for {agent} on {result.scenario}:")
    for p in result.cell.perturbations:
        params = ", ".join(f"{k}={v}" for k, v in p.params.items())
        console.print(f"  {p.name}({params})")
    console.print(
        f"searched {result.examples} schedule(s) x {result.search_trials} trial(s), seed {seed}; "
        f"confirmed on {len(conf.scored)} fresh trial(s): {conf.broken} failed with a fault "
        f"delivered (failure rate {conf.failure_rate:.2f}; clean {result.clean_failure_rate:.2f})"
    )
    console.print(f"faults delivered: {_hits(result)}")
    for name, rate in result.rejected:
        console.print(f"rejected on confirmation (failure rate {rate:.2f}): {name}", markup=False)


SearchAgent = Annotated[
    str,
    typer.Option("--agent", "-a", help="a registered agent name, module:factory or exec:COMMAND"),
]
MinFailureRate = Annotated[
    float,
    typer.Option(
        min=0, max=1, help="share of a candidate's trials that must fail from a fault (0-1)"
    ),
]
ConfirmRate = Annotated[
    float,
    typer.Option(
        min=0, max=1, help="share of the fresh trials that must fail to confirm a find (0-1)"
    ),
]
Plugins = Annotated[
    list[str] | None,
    typer.Option("--plugin", help="only schedules of these plugins (repeatable; default: all)"),
]
ToolGlobs = Annotated[
    list[str] | None,
    typer.Option("--tools", help="only fault calls to tools matching these globs (repeatable)"),
]


def search_cmd(
    agent: SearchAgent,
    scenario: Annotated[
        str, typer.Option("--scenario", "-s", help="the one scenario id to search on")
    ],
    scenario_path: ScenarioPaths = None,
    trials: Annotated[int, typer.Option("--trials", "-n", min=1, help="trials per candidate")] = 3,
    seed: Annotated[int, typer.Option(help="run seed; the search is deterministic in it")] = 0,
    budget: Annotated[
        int, typer.Option(min=1, help="candidate schedules to try before shrinking")
    ] = 200,
    confirm: Annotated[
        int, typer.Option(min=1, help="fresh trials to confirm the shrunk schedule")
    ] = 20,
    min_failure_rate: MinFailureRate = 1.0,
    confirm_rate: ConfirmRate = 0.8,
    max_faults: Annotated[int, typer.Option(min=1, help="largest stack of faults to try")] = 3,
    plugin: Plugins = None,
    tools: ToolGlobs = None,
    model: Annotated[str, typer.Option(help="model name given to the agent")] = "sim-1",
    temperature: Annotated[
        float, typer.Option(min=0, help="sampling temperature given to the agent")
    ] = 0.7,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="save the spec here (a file for 'chaoseval run -p')"),
    ] = None,
    app_dir: AppDir = None,
    config: ConfigPath = None,
) -> None:
    """Find the smallest perturbation schedule that makes an agent fail a scenario.

    Exit status 1 when the find did not confirm on fresh trials (it is still saved, marked
    "confirmed": false), 2 when no schedule broke the agent.
    """
    from chaoseval.investigate.search import search

    try:
        found = select_scenarios(project_scenario_paths(scenario_path, config), [scenario])
        if len(found) != 1:
            raise ConfigError(
                f"--scenario {scenario!r} matches {len(found)} scenarios; name exactly one: "
                + ", ".join(s.id for s in found)
            )
        the_agent = user_agent(agent, project_app_dir(app_dir, config))
        clock_notice(the_agent, agent)  # a search runs hundreds of trials: say it early
        from chaoseval.model.records import ModelSettings  # pydantic: not paid by --help

        result = search(
            found[0],
            the_agent,
            agent_name=agent,
            model=ModelSettings(model=model, temperature=temperature),
            seed=seed,
            trials=trials,
            budget=budget,
            min_failure_rate=min_failure_rate,
            confirm=confirm,
            confirm_rate=confirm_rate,
            max_faults=max_faults,
            plugins=plugin,
            tools=tools,
        )
        if out is not None:
            result.save(out)
    except ChaosevalError as exc:
        fail(exc)
    _print_find(result, agent, seed)
    if not result.confirmed:
        console.print(
            f"[bold yellow]not confirmed:[/] fewer than {confirm_rate:.0%} of the fresh trials "
            "failed; the schedule breaks the agent only sometimes"
        )
        raise typer.Exit(1)
    if out is not None:
        console.print(f"saved to {out}; add it to a matrix with: chaoseval run -p {out}")
    else:
        console.print(json.dumps(result.spec(), indent=2), markup=False)


def diverge_cmd(
    journal: Annotated[Path, typer.Argument(help="a journal written by 'chaoseval run'")],
    format: Annotated[str, typer.Option("--format", "-f", help="table | json")] = "table",
    baseline: Annotated[
        bool, typer.Option(help="compare all-failing cells with the clean cell's successes")
    ] = True,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="write the JSON here (with -f json)")
    ] = None,
) -> None:
    """Where failed trials first left the path successful ones took, grouped by that point."""
    from chaoseval.investigate.diverge import Analysed, to_json
    from chaoseval.model.records import CLEAN
    from chaoseval.render.jsonstream import Streamed, write_json
    from chaoseval.store.columns import read_trials

    try:
        data = read_trials(journal)
        analysed = Analysed(data, baseline=baseline)
        if format == "json":
            # A task at a time, as json.dumps(indent=2) writes the whole document; redacted
            # piece by piece (each piece whole tasks), as a command's stdout is.
            doc = to_json(analysed, data, lists=Streamed)
            if output:
                with output.open("w") as fh:
                    write_json(doc, redact.RedactingStream(fh))  # type: ignore[arg-type]
            else:
                write_json(doc, sys.stdout)
            return
        if format != "table":
            raise ConfigError(f"unknown --format {format!r}; use table or json")
        tasks = list(analysed)
    except ChaosevalError as exc:
        fail(exc)
    table = Table(
        "scenario", "cell", "pass/fail", "consistency", "first divergence", "n", show_lines=True
    )
    for t in tasks:
        style = {"stable error": "bold red", "inconsistent": "yellow", "stable": "green"}.get(
            t.consistency, ""
        )
        consistency = f"[{style}]{t.consistency}[/]" if style else t.consistency
        if t.groups:  # the agent's own steps: shown, never obeyed (escapes, markup)
            labels = "\n".join(escape(g.label) for g in t.groups)
            counts = "\n".join(str(g.count) for g in t.groups)
            if t.reference == CLEAN:
                labels = "(vs clean successes)\n" + labels
                counts = "\n" + counts
        elif t.failed:
            labels, counts = "(no successful trial to compare with)", ""
        else:
            labels, counts = "", ""
        table.add_row(escape(t.scenario), escape(t.cell), f"{t.passed}/{t.failed}", consistency,
                      labels, counts)  # fmt: skip
    console.print(table)
    stable_errors = [t for t in tasks if t.consistency == "stable error"]
    if stable_errors:
        console.print(
            f"[bold red]{len(stable_errors)} stable error(s)[/]: consistent, and consistently "
            "wrong: " + escape(", ".join(f"{t.scenario} [{t.cell}]" for t in stable_errors)),
            markup=True,
        )


def _step_cell(step: Step | None) -> str:
    if step is None:
        return ""
    if step.kind == "tool":
        args = ", ".join(f"{k}={v!r}" for k, v in (step.args or {}).items())
        text = f"{step.tool}({args}) → {step.result_class}"
        if step.faults:
            text += f" [fault {','.join(map(str, step.faults))}]"
        return text
    if step.kind == "model":
        from chaoseval.model.trajectory import ModelCallData

        d = step.data
        tokens = (d.input_tokens, d.output_tokens) if isinstance(d, ModelCallData) else (0, 0)
        return f"model ({tokens[0]} in / {tokens[1]} out)"
    if step.kind == "answer":
        return "answer" + (" (gave up)" if step.gave_up else "")
    return step.kind


def replay_cmd(
    journal: Annotated[Path, typer.Argument(help="a journal written by 'chaoseval run'")],
    trial_id: Annotated[str, typer.Argument(help="scenario/cell/index, as in the journal")],
    scenario_path: ScenarioPaths = None,
    app_dir: AppDir = None,
    config: ConfigPath = None,
) -> None:
    """Re-run one trial from its recorded seeds and show it beside the original."""
    from chaoseval.investigate.replay import replay

    try:
        # A journal's agent may be a module:factory from there.
        append_path(project_app_dir(app_dir, config))
        data = _with_trial(journal, trial_id)
        scenarios = _run_scenarios(scenario_path, config, data.manifest)
        _say_changed(data.manifest, scenarios, [data.records[0].scenario], "replays")
        if data.manifest.user_model:  # an LLM's words do not follow from the trial's seeds
            err.print(
                f"[bold yellow]warning:[/] an LLM played this run's users "
                f"({escape(data.manifest.user_model)}); a replay's user is the deterministic "
                "one, so its conversation may differ",
                soft_wrap=True,
            )
        result = replay(data, trial_id, scenarios)
    except ChaosevalError as exc:
        fail(exc)
    a, b = result.original, result.replayed
    table = Table("#", "t", "recorded", "replayed", "", title=f"replay of {escape(trial_id)}")
    for i in range(max(len(a.trajectory.steps), len(b.trajectory.steps))):
        sa = a.trajectory.steps[i] if i < len(a.trajectory.steps) else None
        sb = b.trajectory.steps[i] if i < len(b.trajectory.steps) else None
        same = result.same_step(i)  # wall-clock fields aside
        either = sa or sb
        t = f"{either.t:g}" if either is not None else ""
        if sa is not None and sb is not None and sa.t != sb.t:
            t = f"{sa.t:g} / {sb.t:g}"
        table.add_row(  # the agent's text: shown, never obeyed (escapes, markup)
            str(i), t, escape(_step_cell(sa)), escape(_step_cell(sb)), "=" if same else "[red]≠[/]"
        )
    table.add_row("", "", escape(_outcome(a)), escape(_outcome(b)), "")
    console.print(table)
    if result.exact:
        console.print("[green]reproduced exactly[/] (wall-clock fields ignored)")
    else:
        console.print(
            "[bold yellow]same steps, different timings[/]: the agent waited differently "
            "(an unseeded random source in its waits?):"
            if result.same_steps
            else "[bold red]did not reproduce[/]:"
        )
        for d in result.differences:
            console.print(f"  {visible(d)}", markup=False)
        raise typer.Exit(1)


def _outcome(r: TrialRecord) -> str:
    """'failed (timeout)'; for a crash, what the agent raised."""
    from chaoseval.investigate.semantic import crash_reason

    return f"{r.status} ({crash_reason(r) or r.root_cause or '-'})"


def sample_cmd(
    journal: Annotated[Path, typer.Argument(help="a journal written by 'chaoseval run'")],
    n: Annotated[int, typer.Option("--n", "-n", min=1, help="how many trials to draw")] = 10,
    seed: Annotated[int, typer.Option(help="sampling seed: the same seed draws the same")] = 0,
    status: Annotated[
        str,
        typer.Option(
            help="passed (default: a judge's passes deserve a second look) | failed | any"
        ),
    ] = "passed",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="write the Markdown here (default: standard output)"),
    ] = None,
    scenario_path: Annotated[
        list[Path] | None,
        typer.Option(
            "--scenarios",
            help="scenario files or directories the journal's scenarios come from, to rebuild "
            "their instructions (default: the settings' scenario_paths, else the installed "
            "packs)",
        ),
    ] = None,
    sheet: Annotated[
        Path | None,
        typer.Option(
            help="write the CSV label sheet here (default: beside --output, its name ending "
            ".csv; none when the Markdown goes to standard output)"
        ),
    ] = None,
    config: ConfigPath = None,
) -> None:
    """Draw a reproducible sample of trials, stratified by cell and verdict, and write them to
    Markdown for human review, with a CSV label sheet for 'chaoseval review'."""
    from chaoseval.investigate.replay import to_markdown
    from chaoseval.investigate.sheet import draw, sheet_csv
    from chaoseval.store.columns import read_trials

    if sheet is None and output is not None:
        sheet = output.with_suffix(".csv")
    try:
        data = read_trials(journal)
        drawn = draw(data, n, seed, status)
        chosen = [data.record(d.row) for d in drawn]
        # The drawn trials' scenarios only: what rebuilding and warning about them reads (a
        # 100k-task manifest made whole took 670 MB of sample's 733, issue 47).
        manifest = data.manifest_of({r.scenario for r in chosen})
        try:
            scenarios = _run_scenarios(scenario_path, config, manifest)
        except ChaosevalError as exc:
            err.print(f"[yellow]warning:[/] instructions not rebuilt: {escape(str(exc))}")
            scenarios = []
        _say_changed(manifest, scenarios, {r.scenario for r in chosen}, "rebuilds instructions")
        # Agents' and scenarios' text, made visible: a control character is never obeyed
        # where the Markdown is printed or later shown.
        text = visible(to_markdown(chosen, data, scenarios, seed=seed, status=status))
    except ChaosevalError as exc:
        fail(exc)
    if output is not None:
        output.write_text(redact.redact(text))
        console.print(f"wrote {len(chosen)} trial(s) to {output}")
    else:
        print(text)
    if sheet is not None:
        sheet.write_text(redact.redact(sheet_csv(data, drawn)), encoding="utf-8")
        err.print(
            f"label sheet: {escape(str(sheet))}; fill reviewer_verdict (passed or failed), then "
            f"chaoseval review {escape(str(journal))} {escape(str(sheet))}",
            soft_wrap=True,
        )


def _run_scenarios(
    given: list[Path] | None, config: Path | None, manifest: RunManifest
) -> list[Scenario]:
    """The scenarios a journal's trials ran on: from ``--scenarios``, else the settings'
    scenario_paths, else the files the run loaded them from (recorded in its manifest, those
    still there), else the installed packs."""
    paths = project_scenario_paths(given, config)
    if paths is None and manifest.scenario_paths:
        paths = [Path(p) for p in manifest.scenario_paths if Path(p).exists()] or None
    return load_scenarios(paths)


def _say_changed(
    manifest: RunManifest, scenarios: list[Scenario], ids: Iterable[str], doing: str
) -> None:
    """A warning per scenario whose file changed since the run (its sha256 differs)."""
    from chaoseval.investigate.replay import changed_since

    for line in changed_since(manifest, scenarios, ids):
        err.print(
            f"[bold yellow]warning:[/] {escape(line)}; this {doing} from the file as it is now",
            soft_wrap=True,
        )


def _with_trial(path: Path, trial_id: str) -> Journal:
    """The journal as replay reads it, holding only the trial asked for: the columns find its
    line and only that record is read (a missing id is named with the closest ones)."""
    from chaoseval.investigate.replay import no_trial
    from chaoseval.store.columns import read_trials
    from chaoseval.store.journal import Journal  # at run time

    t = read_trials(path)
    row = next((r for r in range(len(t)) if t.trial_id(r) == trial_id), None)
    if row is None:
        raise no_trial(t.path, trial_id, (t.trial_id(r) for r in range(len(t))))
    record = t.record(row)
    # Only its task's entries of the manifest: at 100k tasks the whole made 670 MB (issue 47).
    manifest = t.manifest_of({record.scenario})
    return Journal(t.path, manifest, [record], t.warnings, t.cut_off_line)


def register(app: typer.Typer) -> None:
    app.command("search")(search_cmd)
    app.command("diverge")(diverge_cmd)
    app.command("replay")(replay_cmd)
    app.command("sample")(sample_cmd)
