"""Result files shaped as tau-bench and tau2-bench write them, and their own pass^k.

Neither benchmark installs from PyPI, so the shapes are transcribed from their source:
- tau-bench ``tau_bench/run.py`` (sierra-research/tau-bench): the checkpoint is a JSON list of
  ``EnvRunResult.model_dump()`` = ``{task_id: int, reward, info, traj, trial}``; a solve that
  raised is written as ``reward 0.0, info {"error", "traceback"}, traj []``. Its
  ``display_metrics``: ``num_trials`` = distinct trial numbers, c = successes per task (reward
  within 1e-6 of 1), pass^k = mean over tasks of C(c, k) / C(num_trials, k).
- tau2-bench ``tau2/data_model/simulation.py`` ``Results`` = ``{timestamp, info, tasks,
  simulations}``; the "dir" format writes ``results.json`` without ``simulations`` but with a
  ``simulation_index`` (``{id, task_id, trial, reward, termination_reason, agent_cost,
  duration}``) and each ``SimulationRun`` to ``simulations/<id>.json``.
  ``tau2/metrics/agent_metrics.py``: drop ``infrastructure_error`` simulations, then per task
  pass^k = C(successes, k) / C(its simulations, k), averaged over tasks, for k up to the
  smallest task's count.
"""

from __future__ import annotations

import json
from math import comb
from pathlib import Path
from typing import Any

# A trial outcome in a fixture: a reward (0, 1, 0.5...), "crash" (tau-bench: the solve raised)
# or a tau2 termination reason whose simulation was not scored.
Outcome = float | int | str


def _ok(reward: Any) -> bool:
    return reward is not None and (1 - 1e-6) <= reward <= (1 + 1e-6)


def tau_bench_results(per_task: dict[int, list[Outcome]]) -> list[dict[str, Any]]:
    rows = []
    for task_id, outcomes in per_task.items():
        for trial, o in enumerate(outcomes):
            if o == "crash":
                info = {"error": "RateLimitError: slow down", "traceback": "Traceback ..."}
                rows.append(
                    {"task_id": task_id, "reward": 0.0, "info": info, "traj": [], "trial": trial}
                )
            else:
                info = {
                    "task": {"user_id": "u", "actions": [], "instruction": "", "outputs": []},
                    "source": "user",
                    "user_cost": 0.01,
                    "reward_info": None,
                }
                rows.append(
                    {
                        "task_id": task_id,
                        "reward": float(o),
                        "info": info,
                        "traj": [{"role": "system", "content": "wiki"}],
                        "trial": trial,
                    }
                )
    return rows


def tau_bench_pass_hat(rows: list[dict[str, Any]], k: int) -> float:
    num_trials = len({r["trial"] for r in rows})
    c: dict[int, int] = {}
    for r in rows:
        c[r["task_id"]] = c.get(r["task_id"], 0) + _ok(r["reward"])
    return sum(comb(x, k) / comb(num_trials, k) for x in c.values()) / len(c)


def _simulation(task_id: str, trial: int, o: Outcome) -> dict[str, Any]:
    scored = not isinstance(o, str)
    reason = "user_stop" if scored else o
    if not scored and o == "max_steps":
        scored, o = True, 0  # a run cut at max_steps is still evaluated: reward 0
    return {
        "id": f"sim-{task_id}-{trial}",
        "task_id": task_id,
        "timestamp": "2026-01-01T00:00:00",
        "start_time": "2026-01-01T00:00:00",
        "end_time": "2026-01-01T00:00:05",
        "duration": 5.0,
        "termination_reason": reason,
        "agent_cost": 0.02,
        "user_cost": 0.01,
        "reward_info": {
            "reward": float(o),
            "db_check": None,
            "env_assertions": None,
            "action_checks": None,
            "nl_assertions": None,
            "communicate_checks": None,
            "reward_basis": ["DB"],
            "reward_breakdown": None,
            "info": None,
        }
        if scored
        else None,
        "messages": [],
        "trial": trial,
        "seed": 300 + trial,
        "mode": "half_duplex",
    }


def tau2_results(per_task: dict[str, list[Outcome]], num_trials: int) -> dict[str, Any]:
    info = {
        "git_commit": "abc123",
        "num_trials": num_trials,
        "max_steps": 100,
        "max_errors": 10,
        "user_info": {"implementation": "user_simulator", "llm": "gpt-4.1", "llm_args": {}},
        "agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1", "llm_args": {}},
        "environment_info": {"domain_name": "airline", "policy": "..."},
        "seed": 300,
    }
    tasks = [{"id": t, "evaluation_criteria": None} for t in per_task]
    sims = [_simulation(t, i, o) for t, outs in per_task.items() for i, o in enumerate(outs)]
    return {"timestamp": "2026-01-01T00:00:00", "info": info, "tasks": tasks, "simulations": sims}


def write_tau2_dir(results: dict[str, Any], root: Path) -> None:
    """tau2's ``Results.save(path, format="dir")``: metadata and index, one file a simulation."""
    sims_dir = root / "simulations"
    sims_dir.mkdir(parents=True)
    meta = {key: value for key, value in results.items() if key != "simulations"}
    meta["simulation_index"] = [
        {
            "id": s["id"],
            "task_id": s["task_id"],
            "trial": s["trial"],
            "reward": (s["reward_info"] or {}).get("reward"),
            "termination_reason": s["termination_reason"],
            "agent_cost": s["agent_cost"],
            "duration": s["duration"],
        }
        for s in results["simulations"]
    ]
    (root / "results.json").write_text(json.dumps(meta, indent=2))
    for s in results["simulations"]:
        (sims_dir / f"{s['id']}.json").write_text(json.dumps(s, indent=2))


def tau2_pass_hat(simulations: list[dict[str, Any]], k: int) -> float:
    kept = [s for s in simulations if s["termination_reason"] != "infrastructure_error"]
    per_task: dict[str, list[bool]] = {}
    for s in kept:
        per_task.setdefault(s["task_id"], []).append(_ok((s["reward_info"] or {}).get("reward")))
    assert k <= min(len(v) for v in per_task.values()), "tau2 reports k up to the smallest n"
    return sum(comb(sum(v), k) / comb(len(v), k) for v in per_task.values()) / len(per_task)
