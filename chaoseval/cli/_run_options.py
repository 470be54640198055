"""The options of ``chaoseval run``, as typer reads them: one annotated type a flag."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chaoseval.cli._common import above_zero

BudgetCost = Annotated[
    float | None,
    typer.Option(
        callback=above_zero, help="stop starting trials once the run's model cost reaches this"
    ),
]
RedactPatterns = Annotated[
    list[str] | None,
    typer.Option(
        "--redact", help="regular expression whose matches are never written (repeatable)"
    ),
]
BudgetTokens = Annotated[
    int | None,
    typer.Option(min=1, help="stop starting trials once the run's tokens reach this"),
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
UserModelEndpoint = Annotated[
    str | None,
    typer.Option(
        help="OpenAI-compatible API an LLM plays the conversational scenarios' users through "
        "(default: the deterministic user, no model and no network)",
        show_default=False,
    ),
]
UserModelName = Annotated[
    str | None,
    typer.Option(help="--user-model-endpoint: the model that plays the user", show_default=False),
]
UserModelKeyEnv = Annotated[
    str, typer.Option(help="environment variable holding the --user-model-endpoint key")
]
PricesFile = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="TOML or JSON price table for model-call costs (wire and simulated agents): per "
        "model name, 'input' and 'output' in USD per million tokens (replaces the built-in "
        "entries it names)",
    ),
]
ExecutorName = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help="where trials run: inprocess, process (worker processes a stuck, exiting or "
        "crashing agent cannot take down) or ray (a Ray cluster: pip install "
        "'chaoseval[ray]'); default: process for real-clock agents",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="an existing Ray cluster to run on (e.g. 10.0.0.5:6379, or auto); implies "
        "--executor ray. Without it, --executor ray starts a local Ray (docs/RAY.md)",
        show_default=False,
    ),
]
MaxMemory = Annotated[
    str | None,
    typer.Option(help="RSS limit per worker process (e.g. 2G, 512M); past it, a crash"),
]
MaxRequestSize = Annotated[
    str | None,
    typer.Option(
        help="largest request body a trial's servers accept (model channel, MCP, HTTP tools, "
        "pages; e.g. 8M, 32M): over it, a 413 and the agent's oversized request in its trial",
        show_default="8M",
    ),
]


Perturbations = Annotated[
    list[str] | None,
    typer.Option(
        "--perturbation",
        "-p",
        help="one matrix cell per flag (repeatable): a plugin ('latency'), with parameters "
        "('latency:mean=0.5,jitter=0.1'), a sweep ('latency:mean=0.5|2|8', one cell per "
        "value), a stack ('latency+timeout') or a saved spec.json; every cell runs beside "
        "clean. 'chaoseval perturbations list' shows the plugins",
    ),
]
Concurrency = Annotated[
    int | None,
    typer.Option(
        "--concurrency",
        "-j",
        min=1,
        help="trials run at the same time (at least 1)",
        show_default="4",
    ),
]
RunAppDir = Annotated[
    Path | None,
    typer.Option(
        "--app-dir",
        help="where --agent module:factory is imported from, after the installed packages "
        "(default: the working directory; for an agent set in the settings file, its directory)",
        show_default=False,
    ),
]
Ks = Annotated[
    list[int] | None,
    typer.Option(
        "--k",
        min=1,
        help="k values for pass@k / pass^k, each between 1 and --trials (repeatable; default: "
        "1, 2, 5 up to --trials, and --trials itself)",
    ),
]


Agent = Annotated[
    str | None,
    typer.Option(
        "--agent",
        "-a",
        help="a registered agent name (naive, resilient, ...), module:factory importable "
        "from --app-dir, or exec:COMMAND (required here or in the settings file); the first "
        "two take parameters for the factory as perturbations do: resilient:slips=false",
        show_default=False,
    ),
]
Trials = Annotated[
    int | None,
    typer.Option("--trials", "-n", min=1, help="trials per scenario and cell", show_default="5"),
]
Primary = Annotated[
    str | None,
    typer.Option(
        help="the metric verdicts are judged by, declared before the data: pass^K, pass@K or "
        "mean (recorded in the journal; report, compare and gate use it)",
        show_default="pass^1",
    ),
]
Seed = Annotated[
    int | None,
    typer.Option(help="run seed: every random stream derives from it", show_default="0"),
]
ModelName = Annotated[
    str | None, typer.Option(help="model name given to the agent", show_default="sim-1")
]
Temperature = Annotated[
    float | None,
    typer.Option(min=0, help="sampling temperature given to the agent", show_default="0.7"),
]
ModelSeed = Annotated[int | None, typer.Option(help="sampling seed given to the agent")]
Journal = Annotated[
    Path | None, typer.Option(help="JSONL journal to write", show_default="chaoseval.jsonl")
]
Resume = Annotated[
    bool,
    typer.Option(help="continue an interrupted journal (it must exist), keeping its trials"),
]
Overwrite = Annotated[bool, typer.Option(help="replace an existing journal")]
TrialTimeout = Annotated[
    float | None,
    typer.Option(
        callback=above_zero,
        help="wall-clock seconds before a hung trial is stopped (default: from the "
        "scenarios' budgets)",
    ),
]
ShowProgress = Annotated[
    bool,
    typer.Option(
        help="show progress: a bar in a terminal, a status line every few seconds in a pipe "
        "or CI log"
    ),
]
Report = Annotated[bool, typer.Option(help="print the report when done")]
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="instead of the report's tables, one line per cell: its counts and status "
        "(--no-report: nothing)",
    ),
]
GateRules = Annotated[
    list[str] | None,
    typer.Option(
        "--gate",
        help="a gate rule to judge the run by when it ends, as `gate --rule` (repeatable; "
        "replaces the settings' gate list): then run exits as gate does (0 held, 1 broken, 3 "
        "undecided); without rules it exits 0",
    ),
]
SandboxMode = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        help="how exec: agents are kept apart: auto (bubblewrap where it works, else a "
        "warning), bwrap (refuse to run without it) or none (docs/SECURITY.md)",
        show_default="auto",
    ),
]

Sequential = Annotated[
    bool | None,
    typer.Option(
        "--sequential/--fixed",
        help="run in rounds and stop each cell once an anytime-valid test decides it (broken, "
        "improved, or held within --margin): -n is the first round's trials per task "
        "(docs/SEQUENTIAL.md)",
        show_default="fixed",
    ),
]
RoundSize = Annotated[
    int | None,
    typer.Option(
        min=1, help="--sequential: trials per task each later round adds", show_default="2"
    ),
]
MaxTrialsPerTask = Annotated[
    int | None,
    typer.Option(
        min=1, help="--sequential: the most trials a task gets in a cell", show_default="20"
    ),
]
Allocate = Annotated[
    float | None,
    typer.Option(
        "--allocate",
        help="--sequential: after the first round, run each later trial of a task whose "
        "paired differences were all the same with this probability, importance-weighted so "
        "the guarantee holds (docs/SEQUENTIAL.md); off: every task runs every round",
        show_default="off",
    ),
]
RunMargin = Annotated[
    float | None,
    typer.Option(
        "--margin",
        help="--sequential: a cell holds once its drop in pass^1 is shown to be under this",
        show_default="0.1",
    ),
]
RunAlpha = Annotated[
    float | None,
    typer.Option(
        "--alpha",
        help="--sequential: the chance of any false claim (broken, improved or held) in the "
        "whole run, whenever it stops",
        show_default="0.05",
    ),
]
BudgetTrials = Annotated[
    int | None,
    typer.Option(min=1, help="stop starting trials once the run has recorded this many"),
]
