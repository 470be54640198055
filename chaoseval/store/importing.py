"""What every importer shares: the journal an imported run becomes (one clean cell, a task per
task id, a trial per trial / epoch) and how a crashed trial is scored (``--errors-as``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chaoseval.errors import ConfigError
from chaoseval.model.records import (
    CLEAN,
    Cell,
    ModelSettings,
    RunManifest,
    ScenarioInfo,
    TrialRecord,
    Usage,
)
from chaoseval.model.seeding import derive_seed

__all__ = ["ERRORS_AS", "check_errors_as", "default_ks"]

# How a trial that crashed before it was scored counts:
# - "source": the way the source benchmark's own pass^k counts it (tau-bench: a failure; tau2:
#   a failure unless the crash was the infrastructure's; Inspect: left out of the metrics), so
#   an imported pass^k equals the benchmark's own;
# - "not-evaluable": never a failure, never dropped (counted apart, as chaoseval's harness errors);
# - "failure": always a failure.
ERRORS_AS = ("source", "not-evaluable", "failure")
EPS = 1e-6  # a reward of 1 within this passes, as tau-bench and tau2 count it


def check_errors_as(errors_as: str) -> str:
    if errors_as not in ERRORS_AS:
        raise ConfigError(f"unknown --errors-as {errors_as!r}; use one of {', '.join(ERRORS_AS)}")
    return errors_as


def default_ks(trials: int) -> list[int]:
    """k values up to the trial count (the sources report pass^k for every k up to n); past 5
    only round ones and n itself, so a 100-trial import does not print 100 columns."""
    n = max(trials, 1)
    return [k for k in range(1, n + 1) if k <= 5 or k == n or k % 10 == 0 or k in (8, 16, 32, 64)]


def read_json(path: Path) -> Any:
    if not path.exists():
        raise ConfigError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
        raise ConfigError(f"{path}: not valid JSON ({msg}{where})") from None


def manifest(
    run_id: str, agent: str, model: str, trials: int, tasks: Iterable[str], source: str
) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        chaoseval_version="import",
        python="",
        packages={"source": source},
        agent=agent,
        model=ModelSettings(model=model or "unknown"),
        seed=0,
        trials=trials,
        ks=default_ks(trials),
        clock="real",
        scenarios=[ScenarioInfo(id=t, domain=source, tags=[source]) for t in sorted(set(tasks))],
        cells=[Cell(name=CLEAN)],
        concurrency=1,
        created_at=datetime.now(UTC),
    )


def record(
    run_id: str,
    agent: str,
    model: str,
    task: str,
    index: int,
    status: str,
    *,
    tags: list[str],
    root_cause: str | None = None,
    error: str | None = None,
    usage: Usage | None = None,
    seconds: float = 0.0,
) -> TrialRecord:
    return TrialRecord(
        run_id=run_id,
        trial_id=f"{task}/{CLEAN}/{index}",
        scenario=task,
        scenario_tags=tags,
        cell=CLEAN,
        index=index,
        seed=derive_seed(run_id, task, index),
        world_seed=0,
        agent=agent,
        model=ModelSettings(model=model or "unknown"),
        status=status,  # type: ignore[arg-type]
        root_cause=root_cause,
        error=error,
        usage=usage or Usage(),
        clock="real",
        sim_seconds=seconds,
        wall_seconds=seconds,
        started_at=datetime.now(UTC),
    )


def unique_index(seen: dict[str, set[int]], task: str, wanted: int | None) -> int:
    used = seen.setdefault(task, set())
    i = wanted if wanted is not None and wanted >= 0 and wanted not in used else 0
    while i in used:
        i += 1
    used.add(i)
    return i


def warn_uneven(seen: dict[str, set[int]]) -> list[str]:
    sizes = {len(v) for v in seen.values()}
    if len(sizes) > 1:
        return [
            f"tasks have different trial counts ({min(sizes)} to {max(sizes)}): pass^k uses "
            "each task's own n, and tasks with fewer than k trials are excluded"
        ]
    return []


def crashed(errors_as: str, source_says_failure: bool) -> bool:
    """Whether a crashed trial counts as a failure (else: not evaluable)."""
    if errors_as == "source":
        return source_says_failure
    return errors_as == "failure"
