"""Lint before any trial: what `run` checks of the scenario files it was given.

Lint's static step (the file loads, every table and column an expression names exists) is
the loading itself, for every scenario. Its trial-running steps (solvable, non-trivial,
reachable) run on the scenarios of ``--scenarios`` files (installed packs are their
authors' to lint): an unsolvable scenario is refused with lint's message before any trial,
since each of its trials would fail and be blamed on the agent; a trivial one, or a listed
perturbation that never reaches the agent, is a warning (the run still measures something).

The verdict is kept per scenario under the user's cache directory
(``$CHAOSEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/chaoseval``, else ``~/.cache/chaoseval``),
keyed by the sha256 of the scenario's file, its id and chaoseval's version: it is a property
of the file and of the code that judges it, not of a journal, so a second run of the same
file (any journal, any directory) reuses it, and results folders stay free of it. A file that
imports code of its own (a ``kind: python`` tool, a Python scenario's helpers) is keyed by
its own bytes only: delete the cache entry, or change the file, to lint it afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from chaoseval.authoring.lint import Finding, ScenarioLint, lint_scenario
from chaoseval.errors import ScenarioError
from chaoseval.model.scenario import Scenario

# As `chaoseval scenario lint` runs by default: three run seeds, two trials each.
SEEDS = (0, 1, 2)
TRIALS = 2
REFUSING = ("solvable",)  # a failed finding of these stops the run


def cache_dir() -> Path:
    explicit = os.environ.get("CHAOSEVAL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chaoseval"


def _key(scenario: Scenario) -> str | None:
    """The cache key of a scenario loaded from a file; None when it has no file to hash."""
    from chaoseval import __version__

    if not scenario.source:
        return None
    try:
        data = Path(scenario.source).read_bytes()
    except OSError:
        return None
    h = hashlib.sha256(data)
    h.update(f"\0{scenario.id}\0{__version__}\0{SEEDS}\0{TRIALS}".encode())
    return h.hexdigest()


def _cached(key: str) -> ScenarioLint | None:
    try:
        data = json.loads((cache_dir() / "lint" / f"{key}.json").read_text())
        findings = [Finding(**f) for f in data["findings"]]
        return ScenarioLint(data["source"], data["scenario"], findings)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent, or not one this code wrote: lint again


def _keep(key: str, report: ScenarioLint) -> None:
    folder = cache_dir() / "lint"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(asdict(report)))
        tmp.replace(folder / f"{key}.json")  # whole or not at all, for a concurrent run
    except OSError:
        pass  # a read-only home: the next run lints again, nothing is lost


def lint_for_run(scenarios: Sequence[Scenario]) -> list[str]:
    """Lint's trial-running steps on each scenario (a cached verdict when its file is
    unchanged); the warnings to print. Raises ScenarioError, naming the scenario, its file
    and lint's findings, when one is unsolvable."""
    warnings: list[str] = []
    for scenario in scenarios:
        key = _key(scenario)
        report = _cached(key) if key else None
        if report is None:
            report = lint_scenario(scenario, seeds=SEEDS, trials=TRIALS)
            refused = any(f.check in REFUSING and not f.ok for f in report.findings)
            if key and not refused:  # a refused one is linted again once fixed
                _keep(key, report)
        for f in report.findings:
            if f.ok or f.skipped:
                continue
            text = f"{f.check}: {f.summary}" + "".join(f"\n  - {d}" for d in f.details)
            if f.check in REFUSING:
                raise ScenarioError(
                    f"scenario {scenario.id!r} is not solvable, so every trial of it would "
                    f"fail and be blamed on the agent; no trial was run. Lint says: {text}\n"
                    f"fix the scenario (chaoseval scenario lint {scenario.source}) and run again",
                    source=scenario.source or scenario.id,
                )
            warnings.append(f"scenario {scenario.id!r} ({scenario.source}): lint {text}")
    return warnings
