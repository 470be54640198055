"""``chaoseval run``: the matrix, written to a journal, then its report."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from chaoseval import redact
from chaoseval.cli._common import (
    ConfigPath,
    ScenarioGlobs,
    ScenarioPaths,
    clock_notice,
    console,
    err,
    fail,
    select_scenarios,
    settings,
    user_agent,
)
from chaoseval.cli._run_options import (
    Agent,
    Allocate,
    BudgetCost,
    BudgetTokens,
    BudgetTrials,
    Concurrency,
    ExecutorName,
    GateRules,
    Journal,
    Ks,
    MaxMemory,
    MaxRequestSize,
    MaxTrialsPerTask,
    ModelEndpoint,
    ModelKeyEnv,
    ModelName,
    ModelSeed,
    Overwrite,
    Perturbations,
    PricesFile,
    Primary,
    Quiet,
    RayAddress,
    RedactPatterns,
    Report,
    Resume,
    RoundSize,
    RunAlpha,
    RunAppDir,
    RunMargin,
    SandboxMode,
    Seed,
    Sequential,
    ShowProgress,
    Temperature,
    Trials,
    TrialTimeout,
    UserModelEndpoint,
    UserModelKeyEnv,
    UserModelName,
)
from chaoseval.errors import (
    ChaosevalError,
    ConfigError,
    HarnessStop,
    IsolationWarning,
    PluginError,
    UpstreamError,
)
from chaoseval.exitcodes import EXIT_HARNESS
from chaoseval.render.printable import escape

if TYPE_CHECKING:
    from chaoseval.config import RunSettings
    from chaoseval.engine.budget import Budget
    from chaoseval.engine.runner import RunConfig, RunProgress
    from chaoseval.engine.toolbox import UnknownTools
    from chaoseval.store import columns


def run_cmd(
    agent: Agent = None,
    perturbations: Perturbations = None,
    scenarios: ScenarioGlobs = None,
    scenario_paths: ScenarioPaths = None,
    trials: Trials = None,
    k: Ks = None,
    primary: Primary = None,
    seed: Seed = None,
    model: ModelName = None,
    temperature: Temperature = None,
    model_seed: ModelSeed = None,
    concurrency: Concurrency = None,
    journal: Journal = None,
    resume: Resume = False,
    overwrite: Overwrite = False,
    trial_timeout: TrialTimeout = None,
    progress: ShowProgress = True,
    report: Report = True,
    quiet: Quiet = False,
    app_dir: RunAppDir = None,
    budget_cost: BudgetCost = None,
    budget_tokens: BudgetTokens = None,
    redact_patterns: RedactPatterns = None,
    model_endpoint: ModelEndpoint = None,
    model_key_env: ModelKeyEnv = "OPENAI_API_KEY",
    user_model_endpoint: UserModelEndpoint = None,
    user_model: UserModelName = None,
    user_model_key_env: UserModelKeyEnv = "OPENAI_API_KEY",
    prices: PricesFile = None,
    config: ConfigPath = None,
    gate: GateRules = None,
    executor: ExecutorName = None,
    max_memory: MaxMemory = None,
    ray_address: RayAddress = None,
    sandbox: SandboxMode = None,
    max_request_size: MaxRequestSize = None,
    sequential: Sequential = None,
    round_size: RoundSize = None,
    max_trials_per_task: MaxTrialsPerTask = None,
    allocate: Allocate = None,
    margin: RunMargin = None,
    alpha: RunAlpha = None,
    budget_trials: BudgetTrials = None,
) -> None:
    """Run the matrix: scenarios x (clean + each perturbation cell) x n trials.

    Settings not given as flags come from chaoseval.toml or [tool.chaoseval] in pyproject.toml.
    """
    flags = dict(locals())  # the parameters, named as the settings they override
    from chaoseval.config import RunSettings
    from chaoseval.engine.toolbox import UnknownTools

    path = journal or Path("chaoseval.jsonl")
    try:
        redact.configure(redact_patterns or [])
        _prices(prices)
        keys = {f for f in RunSettings.__dataclass_fields__ if f != "gate"}
        s = RunSettings.resolve(settings(config), **{n: v for n, v in flags.items() if n in keys})
        path = s.journal
        run_config = _config(s, flags)
        unknown = UnknownTools(run_config.scenarios)  # tallied as trials finish: none kept
        with warnings.catch_warnings():
            warnings.simplefilter("always", IsolationWarning)  # the run gives it once
            warnings.showwarning = _show_warning  # restored on leaving the block
            result = _run(run_config, unknown)
    except HarnessStop as exc:
        _stopped(exc, path)
    except (PluginError, UpstreamError) as exc:
        fail(exc, EXIT_HARNESS)  # the harness stopped the run, not the user's input
    except ChaosevalError as exc:
        fail(exc)
    except KeyboardInterrupt:
        _interrupted(path)
    _finish(result, unknown, path, report, quiet, gate or s.gate)


def _finish(
    result: Any, unknown: UnknownTools, path: Path, report: bool, quiet: bool, rules: list[str]
) -> None:
    """What the finished run says: its notes, the report (or --quiet's lines), then its gate."""
    from chaoseval.render.report import print_report
    from chaoseval.store.columns import read_trials

    _end_notes(result, unknown, path)
    if report and quiet:
        _print_cells(read_trials(path))
    elif report:
        print_report(read_trials(path), console)
    if rules:
        _gate(path, rules)


def _print_cells(t: columns.Trials) -> None:
    """``--quiet``: the run's warnings, then one line per cell, as the verdict's first lines
    (``timeout  0/3 passed (clean 3/3)  broken ...``); the headline when no cell has one."""
    from chaoseval.analysis.build import analyze
    from chaoseval.analysis.simulator import simulator_line
    from chaoseval.analysis.verdict import build_verdict

    for w in [*t.manifest.run_warnings(), *t.warnings]:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    a = analyze(t, list(t.manifest.ks), n_resamples=2_000, references=False)
    v = build_verdict(a, t, 0)
    for line in v.status_lines() or [v.headline()]:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if said := simulator_line(a.user_simulator):  # the simulator's failures, counted apart
        console.print(said, markup=False, highlight=False, soft_wrap=True)


def _gate(path: Path, rules: list[str]) -> None:
    """Judge the finished run by its gate rules and exit as ``chaoseval gate`` does."""
    from chaoseval.cli._gating import judge

    try:
        code = judge(path, rules, [], None)
    except ChaosevalError as exc:
        fail(exc)
    if code:
        raise typer.Exit(code)


def _interrupted(journal: Path) -> NoReturn:
    """Ctrl-C: what was kept, and how to go on; exit 130, as a shell reports SIGINT."""
    err.print(
        f"[bold yellow]interrupted:[/] {_kept(journal)} finished trial(s) are in {journal}; "
        f"run the same command with --resume to carry on"
    )
    raise typer.Exit(130) from None


def _kept(journal: Path) -> int:
    """The trials a journal holds (none when there is none, or it cannot be read)."""
    from chaoseval.store.columns import read_trials

    try:
        return len(read_trials(journal)) if journal.is_file() else 0
    except ChaosevalError:
        return 0


def _stopped(exc: HarnessStop, journal: Path) -> NoReturn:
    """The run stopped on the harness's own failure (a full disk): said once, exit 4."""
    err.print(
        f"[bold red]error:[/] the run stopped on a harness error: {escape(str(exc))}. "
        f"{_kept(journal)} finished trial(s) are in {journal}; no trial the harness could not "
        "finish is booked to the agent. Free space there, then run the same command with "
        "--resume to run the rest.",
        soft_wrap=True,
    )
    raise typer.Exit(EXIT_HARNESS)


def _config(s: RunSettings, flags: dict[str, Any]) -> RunConfig:
    """The runner's configuration from the resolved settings and the flags only a command
    line sets (resume, budgets, the model endpoint, progress)."""
    from chaoseval.engine.executors import default_executor, parse_size
    from chaoseval.engine.runner import RunConfig
    from chaoseval.model.cells import parse_cells
    from chaoseval.model.records import ModelSettings

    _check_journal(s.journal, flags["resume"])
    executor = _executor(flags, s.agent, s.app_dir)  # a wrong pair is said before any loading
    ks = s.ks()
    agent = _agent(s.agent, s.app_dir, flags["model_endpoint"], flags["model_key_env"])
    clock_notice(agent, s.agent)
    scenarios = select_scenarios(s.scenario_paths, s.scenarios)
    cells = parse_cells(s.perturbations)
    _check_tools(scenarios, cells)
    if s.scenario_paths:  # the user's own files: lint them before any trial
        from chaoseval.authoring.prerun import lint_for_run

        for warning in lint_for_run(scenarios):
            err.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    return RunConfig(
        scenarios=scenarios,
        agent=agent,
        agent_name=s.agent,
        cells=cells,
        trials=s.trials,
        seed=s.seed,
        model=ModelSettings(model=s.model, temperature=s.temperature, seed=flags["model_seed"]),
        ks=ks,
        primary=s.primary_metric(),
        concurrency=s.concurrency,
        journal=s.journal,
        resume=flags["resume"],
        overwrite=flags["overwrite"],
        wall_timeout=s.trial_timeout,
        budget_cost=flags["budget_cost"],
        budget_tokens=flags["budget_tokens"],
        budget_trials=flags["budget_trials"],
        sequential=_design(s, flags),
        progress=_progress(flags["progress"]),
        executor=executor or default_executor(agent),
        max_memory=parse_size(flags["max_memory"], "--max-memory"),
        request_limit=s.request_limit,
        user_model=_user_model(flags),
        keep_records=False,  # the journal holds them: memory stays flat
        sandbox=s.sandbox,
        scenario_paths=s.scenario_paths or None,
        gate=flags["gate"] or s.gate or (),
    )


def _user_model(flags: dict[str, Any]) -> Any:
    """--user-model-endpoint's LLM user, or None: the deterministic user."""
    endpoint, name = flags["user_model_endpoint"], flags["user_model"]
    if endpoint is None:
        if name is not None:
            raise ConfigError("--user-model needs --user-model-endpoint URL: where to ask it")
        return None
    from chaoseval.users.llm import UserModel

    return UserModel(endpoint, name or "", flags["user_model_key_env"])


def _run(config: RunConfig, unknown: UnknownTools) -> Any:
    """The fixed matrix, or its rounds (--sequential)."""
    if config.sequential is not None:
        from chaoseval.engine import sequential

        return sequential.run(config, on_record=unknown)
    from chaoseval.engine.runner import run

    return run(config, on_record=unknown)


# The options that shape a sequence: given on the command line to a fixed run, they would
# change nothing, and a user who typed --alpha believes the run controls its error rate.
_SEQUENTIAL_ONLY = ("round_size", "max_trials_per_task", "margin", "alpha")


def _design(s: RunSettings, flags: dict[str, Any]) -> Any:
    """The sequential design (None: a fixed run), -n its first round."""
    if not s.sequential:
        if given := [n for n in _SEQUENTIAL_ONLY if flags.get(n) is not None]:
            named = ", ".join("--" + n.replace("_", "-") for n in given)
            raise ConfigError(
                f"{named}: only a sequential run uses {'it' if len(given) == 1 else 'them'}; "
                "add --sequential (or sequential = true in the settings), or drop "
                f"{'it' if len(given) == 1 else 'them'} for a fixed run of -n trials per task"
            )
        return None
    budget_trials = flags["budget_trials"]
    from chaoseval.model.records import SequentialDesign

    if not 0 < s.margin < 1:
        raise ConfigError(f"--margin must lie strictly between 0 and 1 (got {s.margin})")
    if not 0 < s.alpha < 1:
        raise ConfigError(
            f"--alpha must lie strictly between 0 and 1 (got {s.alpha}); 0.05 is usual"
        )
    if s.trials > s.max_trials_per_task:
        raise ConfigError(
            f"-n {s.trials} (the first round) is above --max-trials-per-task "
            f"{s.max_trials_per_task}: lower -n or raise the cap"
        )
    if s.allocate is not None and not 0 < s.allocate <= 1:
        raise ConfigError(
            f"--allocate must lie in (0, 1] (got {s.allocate}): a settled task's share of its "
            "later trials; 0.25 runs a quarter of them"
        )
    return SequentialDesign(
        alpha=s.alpha,
        margin=s.margin,
        first=s.trials,
        round_size=s.round_size,
        max_trials=s.max_trials_per_task,
        budget_trials=budget_trials,
        # The draws of which settled trials run hang on the run seed: the same seed, the
        # same journal, and a resumed run draws the same.
        settled_rate=s.allocate,
        allocation_seed=None if s.allocate is None else s.seed,
    )


def _check_tools(scenarios: list[Any], cells: list[Any]) -> None:
    """A -p tools=GLOB that selects no tool of the selected scenarios is a typo: its cell
    could never land, so say it before the run instead of in the report after it."""
    from chaoseval.engine.trial import instantiate
    from chaoseval.seams.perturbation import check_tool_globs

    tools = sorted({t.name for s in scenarios for t in s.tools})
    for cell in cells:
        for plugin in instantiate(cell):
            check_tool_globs(plugin, cell.name, tools)


def _executor(flags: dict[str, Any], agent: str, app_dir: Path) -> Any:
    """--executor, as a name; ray as an executor object with --ray-address (which implies it)
    and, for --agent module:factory, the --app-dir its workers import the agent from."""
    name, address = flags["executor"], flags["ray_address"]
    if address and name not in (None, "ray"):
        raise ConfigError(f"--ray-address runs trials on Ray: drop --executor {name} or it")
    if name != "ray" and not address:
        return name
    from chaoseval.engine.executors.ray import RayExecutor

    module_agent = ":" in agent and not agent.startswith("exec:")
    return RayExecutor(address=address, app_dir=app_dir.resolve() if module_agent else None)


def _check_journal(journal: Path, resume: bool) -> None:
    if journal.is_dir():
        raise ConfigError(f"--journal {journal} is a directory; name a .jsonl file")
    if resume and not journal.exists():
        raise ConfigError(
            f"--resume: {journal} does not exist, so there is nothing to continue; check "
            "--journal, or leave out --resume to start a new run"
        )


def _progress(wanted: bool) -> RunProgress | None:
    """A bar in a terminal; in a pipe or CI log, a status line every few seconds."""
    from chaoseval.render.progress import LineProgress, TerminalProgress

    if not wanted:
        return None
    return TerminalProgress() if sys.stderr.isatty() else LineProgress()


def _show_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    """A warning the run gives (trials not isolated), as the CLI's other notes are shown."""
    err.print(f"[bold yellow]warning:[/] {escape(str(message))}")


def _end_notes(result: Any, unknown: UnknownTools, journal: Path) -> None:
    """What the user should know once the run is over, one line each; a sequential run's
    decisions, a line per cell."""
    console.print(
        f"wrote {result.written} trial(s) to {journal}"
        + (f" (resumed; {result.resumed} kept)" if result.resumed else "")
    )
    _budget_note(result.budget, journal)
    if note := unknown.note():
        err.print(f"[bold yellow]note:[/] {escape(note)}")
    if getattr(result, "progress", None) is not None:
        from chaoseval.render.sequential import decision_lines

        for line in decision_lines(result.progress):
            console.print(escape(line), highlight=False, soft_wrap=True)


def _budget_note(budget: Budget | None, journal: Path) -> None:
    if budget is not None and budget.skipped:
        err.print(
            f"[bold yellow]budget reached:[/] {budget.reached}; {budget.skipped} trial(s) not "
            f"started, every recorded trial is in {journal}. Raise the budget and run the same "
            "command with --resume to carry on."
        )


def _prices(path: Path | None) -> None:
    """The run's price table (--prices), or the built-in one."""
    from chaoseval.channels.model import prices

    prices.configure(None if path is None else prices.load_prices(path))


def _agent(name: str, app_dir: Path, endpoint: str | None, key_env: str) -> Any:
    """The agent; with --model-endpoint, its model channel forwards to that API."""
    the_agent = user_agent(name, app_dir)
    if endpoint:
        # Imported here: the model channel's server stack is not paid for by every command.
        from chaoseval.channels.model.session import UpstreamConfig, use_upstream

        use_upstream(the_agent, UpstreamConfig(endpoint=endpoint, key_env=key_env))
    return the_agent


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)
