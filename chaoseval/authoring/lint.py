"""`chaoseval scenario lint`: is a scenario well-formed, solvable, non-trivial and reachable?

Four or five checks per scenario, each with its own verdict and evidence:

- schema: the file loads (every authoring error, with file, line and key path);
- solvable: the scripted agent (the reference solution, executed faithfully) passes every clean
  trial for several run seeds, so each seed's generated world is solvable;
- non-trivial: an agent that does nothing, and one that stops at once claiming success, both
  fail every trial, so the verifier actually checks something;
- conversation (only for scenarios with a user): the reference solution, talking with the
  default user, asks only for facts the user has, is done before the user leaves and reaches
  the script's last line; the demand names arguments its tool takes
  (``authoring.conversation``);
- reachable: each perturbation the scenario lists delivers at least one fault to the agent in
  a canary run with its probability forced to 1 (a fault aimed at a tool the solution never
  calls, or a channel the scenario lacks, would make that matrix cell meaningless).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chaoseval.agents.scripted import ScriptedAgent
from chaoseval.authoring.conversation import check_conversation
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ChaosevalError, ScenarioError
from chaoseval.loading.files import installed_packs, load_files
from chaoseval.loading.files import scenario_files as loading_files
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import CLEAN, Cell, PerturbationSpec, TrialRecord
from chaoseval.model.scenario import Scenario
from chaoseval.seams.agent import AgentOutput, Episode


@dataclass
class Finding:
    check: str  # schema | solvable | non-trivial | conversation | reachable
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)
    skipped: bool = False


@dataclass
class ScenarioLint:
    source: str
    scenario: str | None  # None when the file did not load
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)


class DoNothing:
    """Answers with nothing and calls no tool."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        return AgentOutput(answer="")


class StopAtOnce:
    """Claims success without doing anything: the premature stop of a sloppy agent."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        return AgentOutput(answer="I have handled the request.")


TRIVIAL = {"do-nothing": DoNothing, "stop-at-once": StopAtOnce}


def _run(scenario: Scenario, agent: object, name: str, seed: int, trials: int, cells=()):
    config = RunConfig(
        scenarios=[scenario],
        agent=agent,  # type: ignore[arg-type]
        agent_name=name,
        cells=list(cells),
        trials=trials,
        seed=seed,
        concurrency=1,
        journal=None,
    )
    return run(config).records


def _why(record: TrialRecord) -> str:
    failed = [f"{c.name} ({c.detail[:120]})" for c in record.checks if not c.passed]
    parts = [f"{record.trial_id} seed-world {record.world_seed}: {record.status}"]
    if record.root_cause:
        parts.append(f"root cause {record.root_cause}")
    if record.error:
        parts.append(record.error[:200])
    if failed:
        parts.append("failed checks: " + "; ".join(failed))
    if record.vetoes:
        parts.append("vetoes: " + "; ".join(v.detail for v in record.vetoes))
    return ", ".join(parts)


def check_solvable(scenario: Scenario, seeds: Sequence[int], trials: int) -> Finding:
    records = [
        r
        for seed in seeds
        for r in _run(scenario, ScriptedAgent(), "scripted", seed, trials)
        if r.cell == CLEAN
    ]
    bad = [r for r in records if r.status != "passed"]
    if bad:
        return Finding(
            "solvable",
            False,
            f"the reference solution failed {len(bad)}/{len(records)} clean trials "
            f"(seeds {', '.join(map(str, seeds))})",
            [_why(r) for r in bad[:5]],
        )
    return Finding(
        "solvable",
        True,
        f"the reference solution passed {len(records)}/{len(records)} clean trials "
        f"(seeds {', '.join(map(str, seeds))})",
    )


def check_non_trivial(scenario: Scenario, seeds: Sequence[int]) -> Finding:
    passes: list[str] = []
    counts = []
    for name, cls in TRIVIAL.items():
        records = [r for seed in seeds for r in _run(scenario, cls(), name, seed, 1)]
        won = [r for r in records if r.status == "passed"]
        counts.append(f"{name} failed {len(records) - len(won)}/{len(records)}")
        passes += [f"{name} passed {r.trial_id}: checks {[c.name for c in r.checks]}" for r in won]
    if passes:
        return Finding(
            "non-trivial",
            False,
            "an agent that does nothing passes the verifier: add a check on the final state "
            "or on what the answer must say",
            passes[:5],
        )
    return Finding("non-trivial", True, "; ".join(counts))


def check_talk(scenario: Scenario, seed: int) -> Finding:
    if scenario.user is None:
        return Finding("conversation", True, "the scenario has no user", skipped=True)
    problems, summary = check_conversation(scenario, seed)
    return Finding("conversation", not problems, summary, problems)


def _forced(cell: Cell) -> Cell:
    specs = [
        PerturbationSpec(name=p.name, params={**p.params, "probability": 1.0})
        for p in cell.perturbations
    ]
    return Cell(name=f"canary:{cell.name}", perturbations=specs)


def check_reachable(scenario: Scenario, specs: Sequence[str], seed: int, trials: int) -> Finding:
    if not specs:
        return Finding("reachable", True, "the scenario lists no perturbations", skipped=True)
    problems: list[str] = []
    lines: list[str] = []
    for text in specs:
        try:
            cells = parse_cells([text])
        except ChaosevalError as exc:
            problems.append(f"{text}: {exc}")
            continue
        for cell in cells:
            canary = _forced(cell)
            try:
                records = [
                    r
                    for r in _run(scenario, ScriptedAgent(), "scripted", seed, trials, [canary])
                    if r.cell == canary.name
                ]
            except ChaosevalError as exc:
                problems.append(f"{cell.name}: {exc}")
                continue
            broken = [r for r in records if r.status == "not_evaluable"]
            if broken:
                problems.append(f"{cell.name}: canary trial not evaluable: {broken[0].error}")
                continue
            for spec in cell.perturbations:
                delivered = Counter(
                    f.kind
                    for r in records
                    for f in r.trajectory.faults
                    if f.perturbation == spec.name and f.delivered
                )
                fired = sum(
                    1 for r in records for f in r.trajectory.faults if f.perturbation == spec.name
                )
                label = spec.label() if len(cell.perturbations) > 1 else cell.name
                if not delivered:
                    reason = (
                        "it fired but no fault reached the agent"
                        if fired
                        else f"it never fired: {_missing(spec.name, scenario)}"
                    )
                    problems.append(f"{label}: unreachable; {reason}")
                else:
                    kinds = ", ".join(f"{k} x{n}" for k, n in sorted(delivered.items()))
                    lines.append(
                        f"{label}: {sum(delivered.values())} fault(s) delivered in "
                        f"{len(records)} canary trial(s) ({kinds})"
                    )
    if problems:
        return Finding(
            "reachable",
            False,
            f"{len(problems)} perturbation(s) never reach the agent",
            problems + lines,
        )
    return Finding("reachable", True, f"{len(lines)} perturbation(s) reach the agent", lines)


def _missing(plugin: str, scenario: Scenario) -> str:
    """What the scenario lacks for ``plugin`` to fire, as the plugin names it."""
    from chaoseval.seams.perturbation import registry

    try:
        said = registry.get(plugin).missing(scenario)
    except ChaosevalError:
        said = None
    return said or "it selects no call, tool or channel this scenario's solution uses"


def lint_scenario(
    scenario: Scenario,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    trials: int = 2,
    perturbations: Sequence[str] = (),
) -> ScenarioLint:
    """``perturbations``: cells to canary besides those the scenario lists itself."""
    report = ScenarioLint(scenario.source or scenario.id, scenario.id)
    report.findings.append(Finding("schema", True, "loads"))
    listed = [*(getattr(scenario, "perturbations", None) or []), *perturbations]
    if scenario.drift and not any(p.split(":")[0] == "drift" for p in listed):
        listed.append("drift")  # its drift points must reach the agent (a Python scenario too)
    steps = {
        "solvable": lambda: check_solvable(scenario, seeds, trials),
        "non-trivial": lambda: check_non_trivial(scenario, seeds),
        "conversation": lambda: check_talk(scenario, seeds[0]),
        "reachable": lambda: check_reachable(scenario, listed, seeds[0], trials),
    }
    if scenario.user is None:  # nothing to say about a conversation there is not
        del steps["conversation"]
    for name, step in steps.items():
        try:
            report.findings.append(step())
        except ChaosevalError as exc:
            report.findings.append(Finding(name, False, f"could not run: {exc}"))
    return report


def scenario_files(paths: Iterable[Path]) -> tuple[list[Path], list[ScenarioError]]:
    files, missing = [], []
    for root in paths:
        if not root.exists():
            missing.append(ScenarioError("no such file or directory", source=str(root)))
        else:
            files.extend(loading_files(root))
    return files, missing


def lint_paths(
    paths: Sequence[Path] | None,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    trials: int = 2,
    perturbations: Sequence[str] = (),
) -> list[ScenarioLint]:
    """Lint every scenario under ``paths`` (installed packs when empty). A file that does not
    load gets a failed schema finding listing all its errors; the others are still linted."""
    reports: list[ScenarioLint] = []
    loaded: list[Scenario] = []
    if not paths:
        packs = installed_packs()  # a broken pack is a finding; the others are still linted
        loaded = packs.scenarios
        reports += [_schema_failure(e.source or "installed packs", [e]) for e in packs.errors()]
    else:
        files, missing = scenario_files(paths)
        reports += [_schema_failure(e.source or "?", [e]) for e in missing]
        # The loader run uses: a broken file's errors, and ids defined twice, are refused here
        # exactly as `run` refuses them.
        loaded, errors = load_files(files)
        by_file: dict[str, list[ScenarioError]] = {}
        for e in errors:
            by_file.setdefault(_file_of(e, files), []).append(e)
        reports += [_schema_failure(f, errs) for f, errs in by_file.items()]
    for scenario in loaded:
        reports.append(
            lint_scenario(scenario, seeds=seeds, trials=trials, perturbations=perturbations)
        )
    return reports


def _file_of(error: ScenarioError, files: list[Path]) -> str:
    """The file an error is about: its source, without the ``:line`` a YAML error adds."""
    source = error.source or "?"
    for f in files:
        if source == str(f) or source.startswith(f"{f}:"):
            return str(f)
    return source


def _schema_failure(source: str, errors: list[ScenarioError]) -> ScenarioLint:
    return ScenarioLint(
        source,
        None,
        [Finding("schema", False, f"{len(errors)} authoring error(s)", [str(e) for e in errors])],
    )
