"""``chaoseval run``: the matrix, written to a journal, then its report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from chaoseval import redact
from chaoseval.cli._common import (
    AppDir,
    ScenarioPaths,
    console,
    err,
    fail,
    select_scenarios,
    user_agent,
)
from chaoseval.errors import ChaosevalError

if TYPE_CHECKING:
    from chaoseval.engine.budget import Budget

BudgetCost = Annotated[
    float | None, typer.Option(help="stop starting trials once the run's model cost reaches this")
]
RedactPatterns = Annotated[
    list[str] | None,
    typer.Option(
        "--redact", help="regular expression whose matches are never written (repeatable)"
    ),
]
BudgetTokens = Annotated[
    int | None, typer.Option(help="stop starting trials once the run's tokens reach this")
]

ModelEndpoint = Annotated[
    str | None,
    typer.Option(
        help="OpenAI-compatible API the wire agents' requests go to (default: the offline "
        "chaoseval-sim)"
    ),
]
ModelKeyEnv = Annotated[
    str, typer.Option(help="environment variable holding the --model-endpoint key")
]


def run_cmd(
    agent: Annotated[str, typer.Option("--agent", "-a", help="agent name or module:factory")],
    perturbation: Annotated[
        list[str] | None,
        typer.Option("--perturbation", "-p", help="perturbation cell (repeatable); see docs"),
    ] = None,
    scenario: Annotated[
        list[str] | None, typer.Option("--scenario", "-s", help="id glob, domain or tag:NAME")
    ] = None,
    scenario_path: ScenarioPaths = None,
    trials: Annotated[int, typer.Option("--trials", "-n", help="trials per cell")] = 5,
    k: Annotated[list[int] | None, typer.Option("--k", help="k values for pass@k / pass^k")] = None,
    seed: Annotated[int, typer.Option(help="run seed: every random stream derives from it")] = 0,
    model: Annotated[str, typer.Option(help="model name given to the agent")] = "sim-1",
    temperature: Annotated[float, typer.Option(help="sampling temperature")] = 0.7,
    model_seed: Annotated[int | None, typer.Option(help="sampling seed given to the agent")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-j")] = 4,
    journal: Annotated[Path, typer.Option(help="JSONL journal to write")] = Path("chaoseval.jsonl"),
    resume: Annotated[bool, typer.Option(help="continue an interrupted journal")] = False,
    overwrite: Annotated[bool, typer.Option(help="replace an existing journal")] = False,
    trial_timeout: Annotated[
        float | None, typer.Option(help="wall-clock seconds before a hung trial is stopped")
    ] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    report: Annotated[bool, typer.Option(help="print the report when done")] = True,
    app_dir: AppDir = Path("."),
    budget_cost: BudgetCost = None,
    budget_tokens: BudgetTokens = None,
    redact_patterns: RedactPatterns = None,
    model_endpoint: ModelEndpoint = None,
    model_key_env: ModelKeyEnv = "OPENAI_API_KEY",
) -> None:
    """Run the matrix: scenarios x (clean + each perturbation cell) x n trials."""
    from chaoseval.engine.runner import RunConfig, run
    from chaoseval.model.cells import parse_cells
    from chaoseval.model.records import ModelSettings
    from chaoseval.render.progress import TerminalProgress
    from chaoseval.render.report import print_report
    from chaoseval.store.journal import read_journal

    try:
        redact.configure(redact_patterns or [])
        config = RunConfig(
            scenarios=select_scenarios(scenario_path, scenario),
            agent=_agent(agent, app_dir, model_endpoint, model_key_env),
            agent_name=agent,
            cells=parse_cells(perturbation or []),
            trials=trials,
            seed=seed,
            model=ModelSettings(model=model, temperature=temperature, seed=model_seed),
            ks=_ks(k, trials),
            concurrency=concurrency,
            journal=journal,
            resume=resume,
            overwrite=overwrite,
            wall_timeout=trial_timeout,
            budget_cost=budget_cost,
            budget_tokens=budget_tokens,
            progress=TerminalProgress() if progress and sys.stderr.isatty() else None,
        )
        bad_k = [x for x in config.ks if x < 1 or x > trials]
        if bad_k:
            raise ChaosevalError(f"--k {bad_k} must be between 1 and --trials ({trials})")
        result = run(config)
    except ChaosevalError as exc:
        fail(exc)
    except KeyboardInterrupt:
        kept = len(read_journal(journal).records) if journal.exists() else 0
        err.print(
            f"[bold yellow]interrupted:[/] {kept} finished trial(s) are in {journal}; "
            f"run the same command with --resume to carry on"
        )
        raise typer.Exit(130) from None
    console.print(
        f"wrote {len(result.records) - result.resumed} trial(s) to {journal}"
        + (f" (resumed; {result.resumed} kept)" if result.resumed else "")
    )
    _budget_note(result.budget, journal)
    if report:
        print_report(read_journal(journal), console)


def _budget_note(budget: Budget | None, journal: Path) -> None:
    if budget is not None and budget.skipped:
        err.print(
            f"[bold yellow]budget reached:[/] {budget.reached}; {budget.skipped} trial(s) not "
            f"started, every recorded trial is in {journal}. Raise the budget and run the same "
            "command with --resume to carry on."
        )


def _ks(k: list[int] | None, trials: int) -> list[int]:
    """The k values asked for; by default 1, 2, 5 where the trial count allows, and n itself."""
    return sorted(set(k or [x for x in (1, 2, 5) if x <= trials] + [max(trials, 1)]))


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
