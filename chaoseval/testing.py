"""The pytest plugin (entry point ``pytest11``): a fixture that runs a matrix and asserts gates.

```python
def test_refund_agent_holds_under_faults(chaoseval_matrix):
    result = chaoseval_matrix(perturbations=["timeout"], gate=["pass^1[timeout] >= 0.8"])
    assert result.journal.manifest.trials == 5
```

Every argument left out comes from the project's settings (``[tool.chaoseval]`` in
pyproject.toml or chaoseval.toml, found from the test file's directory upwards), then from
``chaoseval run``'s defaults, exactly as for the command line. A broken gate rule fails the
test with each rule and its measured value; ``check=False`` returns the results instead. The
journal goes to the test's ``tmp_path`` unless ``journal=`` names one.

pytest loads every installed ``pytest11`` plugin in every session, chaoseval's users' and
anyone else's: this module imports nothing of chaoseval until the fixture runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from chaoseval.analysis.build import Analysis
    from chaoseval.analysis.gate import RuleResult
    from chaoseval.config import RunSettings
    from chaoseval.store.journal import Journal

__all__ = ["MatrixResult", "MatrixRunner", "chaoseval_matrix"]


@dataclass
class MatrixResult:
    """What a matrix run left: its journal (and where), its analysis, each gate rule's result."""

    path: Path
    journal: Journal
    analysis: Analysis
    gate: list[RuleResult] = field(default_factory=list)

    @property
    def broken(self) -> list[RuleResult]:
        """The rules that did not hold: broken, or undecided (never a pass)."""
        return [r for r in self.gate if not r.passed]


class MatrixRunner:
    """The ``chaoseval_matrix`` fixture's value: call it to run a matrix."""

    def __init__(self, settings_from: Path, tmp_path: Path) -> None:
        self._settings_from = settings_from
        self._tmp_path = tmp_path

    def __call__(
        self, *, check: bool = True, resamples: int = 2_000, **overrides: Any
    ) -> MatrixResult:
        """Run the matrix; ``overrides`` are the settings' names (agent, scenarios,
        perturbations, trials, seed, gate, ...): a list replaces the configured list."""
        from chaoseval.config import RunSettings, project_config

        overrides.setdefault("journal", self._tmp_path / "chaoseval.jsonl")
        settings = RunSettings.resolve(project_config(start=self._settings_from), **overrides)
        result = _run_and_gate(settings, resamples)
        if check and result.broken:
            lines = [r.message() for r in result.gate]
            undecided = sum(r.undecided for r in result.broken)
            what = "broken" if not undecided else f"broken or undecided ({undecided} undecided)"
            pytest.fail(
                f"chaoseval gate failed: {len(result.broken)} of {len(result.gate)} rule(s) "
                f"{what} (journal: {result.path})\n" + "\n".join(lines),
                pytrace=False,
            )
        return result


def _run_and_gate(s: RunSettings, resamples: int) -> MatrixResult:
    from chaoseval.analysis.build import analyze
    from chaoseval.analysis.gate import evaluate, parse_rule
    from chaoseval.engine.runner import RunConfig, run
    from chaoseval.loading.files import installed, load_paths, select
    from chaoseval.loading.userpath import append_path, check_not_shadowed
    from chaoseval.model.cells import parse_cells
    from chaoseval.model.records import ModelSettings
    from chaoseval.seams.agent import load_agent
    from chaoseval.store.journal import read_journal

    rules = [parse_rule(r) for r in s.gate]  # a typo in a rule stops before any trial runs
    if ":" in s.agent and not s.agent.startswith("exec:"):
        append_path(s.app_dir)
        check_not_shadowed(s.agent.partition(":")[0], s.app_dir)
    scenarios = load_paths(s.scenario_paths) if s.scenario_paths else installed()
    ks = s.ks()
    run(
        RunConfig(
            scenarios=select(scenarios, s.scenarios),
            agent=load_agent(s.agent),
            agent_name=s.agent,
            cells=parse_cells(s.perturbations),
            trials=s.trials,
            primary=s.primary_metric(),
            seed=s.seed,
            model=ModelSettings(model=s.model, temperature=s.temperature),
            ks=ks,
            concurrency=s.concurrency,
            journal=s.journal,
            overwrite=True,
            wall_timeout=s.trial_timeout,
            sandbox=s.sandbox,
            request_limit=s.request_limit,
        )
    )
    journal = read_journal(s.journal)
    wanted = {r.k for r in rules if r.k is not None}
    analysis = analyze(journal, sorted(set(ks) | wanted), n_resamples=resamples, references=True)
    return MatrixResult(s.journal, journal, analysis, evaluate(analysis, rules))


@pytest.fixture
def chaoseval_matrix(request: pytest.FixtureRequest, tmp_path: Path) -> MatrixRunner:
    """Run a chaoseval matrix from the test and fail it when a gate rule is broken."""
    return MatrixRunner(Path(request.path).parent, tmp_path)
