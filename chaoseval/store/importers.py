"""Bring existing runs: tau-bench results and Inspect AI eval logs as chaoseval journals.

Each importer returns a :class:`~chaoseval.store.journal.Journal` (one clean cell, a task per task
id, a trial per trial / epoch), so every metric, report and gate works on it unchanged.

- tau-bench: a JSON list of ``{task_id, trial, reward, info, ...}`` (tau-bench's results
  file), or tau2-bench's ``{"simulations": [{task_id, trial, reward_info: {reward}}]}``. A
  trial passes when its reward is 1 (within 1e-6, as tau-bench counts it). A trial whose
  ``info`` carries an ``error`` (the run crashed before scoring) is *not evaluable*: it is
  neither dropped nor scored as a failure (tau2-bench issue 493).
- Inspect AI: a ``.json`` eval log, or a ``.eval`` zip (``header.json`` plus
  ``samples/<id>_epoch_<n>.json``). Each sample epoch is a trial; its score value is a pass
  when it is ``"C"`` (CORRECT), ``True`` or a number >= 1. A sample with an ``error`` is not
  evaluable. ``scorer`` picks one scorer when a log has several (default: the first).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
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
from chaoseval.store.journal import Journal

__all__ = ["SOURCES", "load_inspect", "load_source", "load_tau_bench"]

SOURCES = ("tau-bench", "inspect")
_EPS = 1e-6


def load_source(source: str, path: Path, scorer: str | None = None) -> Journal:
    if source == "tau-bench":
        return load_tau_bench(path)
    if source == "inspect":
        return load_inspect(path, scorer=scorer)
    raise ConfigError(f"unknown --from {source!r}; use one of {', '.join(SOURCES)}")


def _read_json(path: Path) -> Any:
    if not path.exists():
        raise ConfigError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def _manifest(
    run_id: str, agent: str, model: str, trials: int, tasks: Iterable[str], source: str
) -> RunManifest:
    ks = [k for k in (1, 2, 5) if k <= max(trials, 1)] or [1]
    return RunManifest(
        run_id=run_id,
        chaoseval_version="import",
        python="",
        packages={"source": source},
        agent=agent,
        model=ModelSettings(model=model or "unknown"),
        seed=0,
        trials=trials,
        ks=ks,
        clock="real",
        scenarios=[ScenarioInfo(id=t, domain=source, tags=[source]) for t in sorted(set(tasks))],
        cells=[Cell(name=CLEAN)],
        concurrency=1,
        created_at=datetime.now(UTC),
    )


def _record(
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


def _unique_index(seen: dict[str, set[int]], task: str, wanted: int | None) -> int:
    used = seen.setdefault(task, set())
    i = wanted if wanted is not None and wanted not in used else 0
    while i in used:
        i += 1
    used.add(i)
    return i


# --- tau-bench --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TauResult:
    """One tau-bench / tau2-bench trial result, whichever file shape it came from."""

    task_id: Any
    trial: Any
    reward: Any
    error: Any  # set when the run crashed before scoring: not evaluable
    cost: float
    seconds: float


_TAU2_ERRORS = ("agent_error", "user_error", "too_many_errors")


def _tau2_results(data: dict[str, Any]) -> tuple[str, str, list[_TauResult]]:
    info = data.get("info") or {}
    agent_info = info.get("agent_info") or {}
    model = str(agent_info.get("llm") or "")
    agent = f"tau2-bench {agent_info.get('implementation', '')}".strip()
    items = [
        _TauResult(
            task_id=s.get("task_id"),
            trial=s.get("trial"),
            reward=(s.get("reward_info") or {}).get("reward"),
            error=s.get("termination_reason")
            if s.get("termination_reason") in _TAU2_ERRORS
            else None,
            cost=float(s.get("agent_cost") or 0.0),
            seconds=float(s.get("duration") or 0.0),
        )
        for s in data["simulations"]
    ]
    return agent, model, items


def _tau_results(path: Path, data: list[Any]) -> list[_TauResult]:
    items = []
    for i, r in enumerate(data):
        if not isinstance(r, dict) or "task_id" not in r:
            raise ConfigError(f"{path}: entry {i} is not a tau-bench result with a task_id")
        info = r.get("info") or {}
        items.append(
            _TauResult(
                task_id=r["task_id"],
                trial=r.get("trial"),
                reward=r.get("reward"),
                error=info.get("error") if isinstance(info, dict) else None,
                cost=float((info.get("total_cost") if isinstance(info, dict) else 0) or 0),
                seconds=0.0,
            )
        )
    return items


def _tau_verdict(it: _TauResult) -> tuple[str, str | None, str | None]:
    """(status, root cause, error) of one result: reward 1 passes, a crash is not evaluable."""
    if it.error or it.reward is None:
        return "not_evaluable", "harness_error", str(it.error or "no reward recorded")[:500]
    if abs(float(it.reward) - 1.0) <= _EPS:
        return "passed", None, None
    return "failed", "wrong_answer", f"reward {float(it.reward):g}"


def load_tau_bench(path: str | Path) -> Journal:
    path = Path(path)
    data = _read_json(path)
    model = ""
    agent = "tau-bench"
    if isinstance(data, dict) and "simulations" in data:
        agent, model, items = _tau2_results(data)
    elif isinstance(data, list):
        items = _tau_results(path, data)
    else:
        raise ConfigError(
            f"{path}: expected a tau-bench results list or a tau2-bench file with 'simulations'"
        )
    if not items:
        raise ConfigError(f"{path}: no results in the file")

    run_id = f"tau-{derive_seed(str(path.resolve())) % 10**12:012d}"
    seen: dict[str, set[int]] = {}
    records = []
    for it in items:
        task = str(it.task_id)
        index = _unique_index(seen, task, it.trial if isinstance(it.trial, int) else None)
        status, cause, err = _tau_verdict(it)
        records.append(
            _record(
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
    manifest = _manifest(run_id, agent, model, trials, seen, "tau-bench")
    return Journal(path, manifest, records, _warn_uneven(seen))


def _warn_uneven(seen: dict[str, set[int]]) -> list[str]:
    sizes = {len(v) for v in seen.values()}
    if len(sizes) > 1:
        return [
            f"tasks have different trial counts ({min(sizes)} to {max(sizes)}): pass^k uses "
            "each task's own n, and tasks with fewer than k trials are excluded"
        ]
    return []


# --- Inspect AI -------------------------------------------------------------------------------


def _inspect_log(path: Path) -> dict[str, Any]:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            header = json.loads(z.read("header.json")) if "header.json" in names else {}
            samples = [
                json.loads(z.read(n))
                for n in sorted(names)
                if n.startswith("samples/") and n.endswith(".json")
            ]
        return {**header, "samples": samples}
    data = _read_json(path)
    if not isinstance(data, dict) or "eval" not in data:
        raise ConfigError(f"{path}: not an Inspect AI eval log (no 'eval' section)")
    return data


def _passed(value: Any) -> bool | None:
    """Inspect score values: "C"/"I"/"P"/"N", booleans, numbers. None when unusable."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value) >= 1.0 - _EPS
    if isinstance(value, str):
        v = value.strip().upper()
        if v in ("C", "I", "P", "N"):
            return v == "C"
        try:
            return float(v) >= 1.0 - _EPS
        except ValueError:
            return None
    return None


def _inspect_verdict(sample: dict[str, Any], score: Any) -> tuple[str, str | None, str | None]:
    """(status, root cause, detail) of one sample epoch: an error or an unusable score is not
    evaluable, never a failure."""
    if sample.get("error"):
        err = sample["error"]
        msg = err.get("message") if isinstance(err, dict) else str(err)
        return "not_evaluable", "harness_error", str(msg)[:500]
    value = score.get("value") if isinstance(score, dict) else None
    verdict = _passed(value) if isinstance(score, dict) else None
    if verdict is None:
        return "not_evaluable", "harness_error", "no usable score"
    if verdict:
        return "passed", None, None
    return "failed", "wrong_answer", f"score {value!r}"


def load_inspect(path: str | Path, scorer: str | None = None) -> Journal:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file")
    log = _inspect_log(path)
    ev = log.get("eval") or {}
    task_name = str(ev.get("task") or "inspect")
    model = str(ev.get("model") or "")
    run_id = str(ev.get("run_id") or ev.get("eval_id") or f"inspect-{path.stem}")
    samples = log.get("samples") or []
    if not samples:
        raise ConfigError(
            f"{path}: the log has no samples (written with --no-log-samples?); chaoseval needs "
            "per-sample scores to compute per-task pass^k"
        )
    seen: dict[str, set[int]] = {}
    records = []
    warnings: list[str] = []
    for s in samples:
        task = str(s.get("id"))
        epoch = s.get("epoch")
        index = _unique_index(seen, task, int(epoch) - 1 if isinstance(epoch, int) else None)
        scores = s.get("scores") or {}
        if scorer is not None and scorer not in scores and scores:
            raise ConfigError(
                f"{path}: no scorer {scorer!r} in sample {task}; scorers: {', '.join(scores)}"
            )
        name = scorer or next(iter(scores), None)
        score = scores.get(name) if name else None
        usage = Usage()
        for u in (s.get("model_usage") or {}).values():
            usage.input_tokens += int(u.get("input_tokens") or 0)
            usage.output_tokens += int(u.get("output_tokens") or 0)
        seconds = float(s.get("total_time") or 0.0)
        status, cause, detail = _inspect_verdict(s, score)
        records.append(
            _record(
                run_id,
                f"inspect {task_name}",
                model,
                task,
                index,
                status,
                tags=[task_name],
                root_cause=cause,
                error=detail,
                usage=usage,
                seconds=seconds,
            )
        )
    if len({n for s in samples for n in (s.get("scores") or {})}) > 1 and scorer is None:
        names = sorted({n for s in samples for n in (s.get("scores") or {})})
        warnings.append(f"several scorers ({', '.join(names)}); used the first of each sample")
    trials = max(len(v) for v in seen.values())
    manifest = _manifest(run_id, f"inspect {task_name}", model, trials, seen, "inspect")
    return Journal(path, manifest, records, warnings + _warn_uneven(seen))
