"""Bring existing runs: tau-bench / tau2-bench results and Inspect AI eval logs as journals.

Each importer returns a :class:`~chaoseval.store.journal.Journal` (one clean cell, a task per task
id, a trial per trial / epoch), so every metric, report and gate works on it unchanged, and by
default (``errors_as="source"``) its pass^k is the source benchmark's own:

- tau-bench (sierra-research/tau-bench ``run.py``): a JSON list of ``EnvRunResult`` dumps
  ``{task_id, reward, info, traj, trial}``. A trial passes when its reward is 1 within 1e-6.
  A trial that raised is written with reward 0 and ``info.error``, and tau-bench's pass^k counts
  it as a failure; so does this importer.
- tau2-bench (sierra-research/tau2-bench ``Results``): either one ``results.json`` holding
  ``simulations``, or the directory format: ``results.json`` (metadata, ``simulation_index``)
  beside ``simulations/<id>.json``, one file a simulation (pass the directory or its
  ``results.json``). tau2's metrics drop only ``infrastructure_error`` simulations (the run
  never happened) and score every other one by its reward, a missing reward failing; so do we.
- Inspect AI: see :mod:`chaoseval.store.inspect_log`.

``errors_as="not-evaluable"`` counts every crashed trial apart instead (neither dropped nor a
failure), ``"failure"`` as a failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaoseval import redact
from chaoseval.errors import ConfigError
from chaoseval.model.records import Usage
from chaoseval.model.seeding import derive_seed
from chaoseval.store.importing import (
    EPS,
    ERRORS_AS,
    check_errors_as,
    crashed,
    manifest,
    read_json,
    record,
    unique_index,
    warn_uneven,
)
from chaoseval.store.inspect_log import load_inspect
from chaoseval.store.journal import Journal

__all__ = ["ERRORS_AS", "SOURCES", "load_inspect", "load_source", "load_tau_bench"]

SOURCES = ("tau-bench", "inspect")


def load_source(
    source: str, path: Path, scorer: str | None = None, errors_as: str = "source"
) -> Journal:
    if source == "tau-bench":
        return load_tau_bench(path, errors_as=errors_as)
    if source == "inspect":
        return load_inspect(path, scorer=scorer, errors_as=errors_as)
    raise ConfigError(f"unknown --from {source!r}; use one of {', '.join(SOURCES)}")


@dataclass(frozen=True)
class _TauResult:
    """One tau-bench / tau2-bench trial result, whichever file shape it came from."""

    task_id: Any
    trial: Any
    reward: Any
    error: str | None  # set when the run crashed before (or instead of) scoring
    source_failure: bool  # whether the source benchmark scores that crash as a failure
    cost: float
    seconds: float


# tau2 termination reasons that mean the simulation broke rather than ended. Only the first is
# dropped by tau2's metrics; the others are scored by their (usually zero or missing) reward.
_TAU2_INFRA = "infrastructure_error"
_TAU2_ERRORS = (_TAU2_INFRA, "agent_error", "user_error", "too_many_errors", "unexpected_error")


def _tau2_result(s: dict[str, Any]) -> _TauResult:
    reason = s.get("termination_reason")
    return _TauResult(
        task_id=s.get("task_id"),
        trial=s.get("trial"),
        reward=(s.get("reward_info") or {}).get("reward"),
        error=f"termination_reason {reason}" if reason in _TAU2_ERRORS else None,
        source_failure=reason != _TAU2_INFRA,
        cost=float(s.get("agent_cost") or 0.0),
        seconds=float(s.get("duration") or 0.0),
    )


def _tau2_simulations(path: Path, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The simulations of a tau2 run in either format: inline, or one file each in the
    ``simulations/`` directory beside ``results.json`` (checked against its index)."""
    sims_dir = path.parent / "simulations"
    if "simulations" in meta and not sims_dir.is_dir():
        return list(meta["simulations"] or [])
    if not sims_dir.is_dir():
        raise ConfigError(f"{path}: no 'simulations' in it and no {sims_dir} directory beside it")
    files = sorted(sims_dir.glob("*.json"))
    index = meta.get("simulation_index")
    if index is not None:
        missing = {str(e.get("id")) for e in index} - {f.stem for f in files}
        if missing:
            raise ConfigError(
                f"{sims_dir}: simulation files listed in {path.name}'s index are missing: "
                f"{', '.join(sorted(missing)[:5])}"
            )
    sims = [read_json(f) for f in files]
    bad = [f.name for f, s in zip(files, sims, strict=True) if not isinstance(s, dict)]
    if bad:
        raise ConfigError(f"{sims_dir}: not a tau2 simulation: {', '.join(bad[:5])}")
    return sims


def _tau2_results(path: Path, meta: dict[str, Any]) -> tuple[str, str, list[_TauResult]]:
    info = meta.get("info") or {}
    agent_info = info.get("agent_info") or {}
    model = str(agent_info.get("llm") or "")
    agent = f"tau2-bench {agent_info.get('implementation', '')}".strip()
    return agent, model, [_tau2_result(s) for s in _tau2_simulations(path, meta)]


def _tau_results(path: Path, data: list[Any]) -> list[_TauResult]:
    items = []
    for i, r in enumerate(data):
        if not isinstance(r, dict) or "task_id" not in r:
            raise ConfigError(f"{path}: entry {i} is not a tau-bench result with a task_id")
        raw_info = r.get("info")
        info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
        error = info.get("error")
        items.append(
            _TauResult(
                task_id=r["task_id"],
                trial=r.get("trial"),
                reward=r.get("reward"),
                error=str(error) if error else None,
                source_failure=True,  # run.py writes reward 0.0 and display_metrics counts it
                cost=float(info.get("total_cost") or 0),
                seconds=0.0,
            )
        )
    return items


def _tau_verdict(it: _TauResult, errors_as: str, tau2: bool) -> tuple[str, str | None, str | None]:
    """(status, root cause, detail) of one result."""
    passed = it.reward is not None and abs(float(it.reward) - 1.0) <= EPS
    if it.error is not None:
        if not crashed(errors_as, it.source_failure):
            return "not_evaluable", "harness_error", redact.head(it.error, 500)
        # As the source does, a crash still counts by its reward (tau-bench writes 0.0; a tau2
        # simulation that ended in agent_error may have been scored), unless told "failure".
        if passed and errors_as == "source":
            return "passed", None, None
        return "failed", "crash", redact.head(it.error, 500)
    if it.reward is None:
        # tau2 scores a missing reward as a failure (NaN is not a success); tau-bench always
        # writes one, so a missing one there is a broken file: not evaluable.
        if crashed(errors_as, source_says_failure=tau2):
            return "failed", "wrong_answer", "no reward recorded"
        return "not_evaluable", "harness_error", "no reward recorded"
    if passed:
        return "passed", None, None
    return "failed", "wrong_answer", f"reward {float(it.reward):g}"


def _read_tau(path: Path) -> tuple[str, str, list[_TauResult]]:
    if path.is_dir():
        path = path / "results.json"
    data = read_json(path)
    if isinstance(data, dict) and ("simulations" in data or "simulation_index" in data):
        return _tau2_results(path, data)
    if isinstance(data, list):
        return "tau-bench", "", _tau_results(path, data)
    raise ConfigError(
        f"{path}: expected a tau-bench results list or a tau2-bench results.json "
        "(with 'simulations', or a simulations/ directory beside it)"
    )


def load_tau_bench(path: str | Path, errors_as: str = "source") -> Journal:
    path = Path(path)
    check_errors_as(errors_as)
    agent, model, items = _read_tau(path)
    if not items:
        raise ConfigError(f"{path}: no results in the file")
    tau2 = agent.startswith("tau2")
    run_id = f"tau-{derive_seed(str(path.resolve())) % 10**12:012d}"
    seen: dict[str, set[int]] = {}
    records = []
    for it in items:
        task = str(it.task_id)
        index = unique_index(seen, task, it.trial if isinstance(it.trial, int) else None)
        status, cause, err = _tau_verdict(it, errors_as, tau2)
        records.append(
            record(
                run_id,
                agent,
                model,
                task,
                index,
                status,
                tags=["tau-bench"],
                root_cause=cause,
                error=err,
                usage=Usage(cost=it.cost),
                seconds=it.seconds,
            )
        )
    trials = max(len(v) for v in seen.values())
    m = manifest(run_id, agent, model, trials, seen, "tau-bench")
    return Journal(path, m, records, warn_uneven(seen))
