"""Synthetic journals written in bulk: one template line per outcome, fields varied by
string substitution, so a million-trial journal takes seconds instead of a million trials.

Used by tests/store/test_columns_memory.py and the tests beside it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from chaoseval.model.records import (
    Cell,
    ModelSettings,
    PerturbationSpec,
    RunManifest,
    TrialRecord,
    Usage,
)
from chaoseval.model.trajectory import Fault, Trajectory

_MARK = "\u00a7{}\u00a7"  # placeholders, replaced in the encoded line


def _template(perturbed: bool, passed: bool, steps: int) -> list[str]:
    traj = Trajectory()
    for i in range(steps):
        traj.add_step(
            "model", t=0.1 * i, data={"input_tokens": 120, "output_tokens": 30, "cost": 1e-5}
        )
        s = traj.add_step(
            "tool", t=0.1 * i, tool=f"tool_{i % 3}", args={"id": i, "q": "x" * 20},
            result_class="ok" if passed or i else "tool_error", result={"rows": [i, i + 1]},
        )  # fmt: skip
        if perturbed and i == 0:
            s.faults.append(traj.add_fault(
                Fault(perturbation="latency", channel="tool", kind="delay", step=s.index,
                      delivered=True, detail={"seconds": 1.5})
            ))  # fmt: skip
    record = TrialRecord(
        run_id="synthetic", trial_id=_MARK.format("id"), scenario=_MARK.format("task"),
        cell=_MARK.format("cell"),
        perturbations=[PerturbationSpec(name="latency")] if perturbed else [],
        index=12345678, seed=987654321, world_seed=1, agent="synthetic", model=ModelSettings(),
        status="passed" if passed else "failed",
        root_cause=None if passed else "timeout", trajectory=traj, steps=len(traj.steps),
        usage=Usage(model_calls=steps, input_tokens=120 * steps, output_tokens=30 * steps,
                    cost=1e-5 * steps),
        sim_seconds=1.25, wall_seconds=0.01, started_at=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    line = record.model_dump_json().replace("12345678", _MARK.format("index"))
    line = line.replace("987654321", _MARK.format("seed"))
    return line.split("\u00a7")


def write_journal(
    path: Path, trials: int, *, tasks: int = 50, cells: int = 5, steps: int = 1, seed: int = 0
) -> int:
    """A journal of ``trials`` trials over ``tasks`` tasks x ``cells`` cells (clean and
    ``cells - 1`` latency cells); about 60% pass, more in clean. Returns its size in bytes."""
    names = ["clean"] + [f"latency{c}" for c in range(1, cells)]
    per = max(1, -(-trials // (tasks * cells)))  # the manifest allows every index written
    manifest = RunManifest(
        run_id="synthetic", chaoseval_version="bench", python="", packages={},
        agent=f"synthetic{seed}", model=ModelSettings(), seed=seed, trials=per, ks=[1, 3],
        clock="virtual", scenarios=[{"id": f"task{t}"} for t in range(tasks)],
        cells=[Cell(name=n) for n in names], concurrency=1,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    templates = {(p, ok): _template(p, ok, steps) for p in (False, True) for ok in (False, True)}
    state = seed * 2654435761 % 2**32 or 1
    with path.open("w", encoding="utf-8") as fh:
        fh.write(manifest.model_dump_json() + "\n")
        batch: list[str] = []
        for n in range(trials):
            task, rest = n % tasks, n // tasks
            cell, index = rest % cells, rest // cells
            state = (state * 1103515245 + 12345) % 2**31  # a cheap, seeded coin per trial
            passed = (state >> 8) % 100 < (75 if cell == 0 else 55) - task % 20
            values = {
                "id": f"task{task}/{names[cell]}/{index}", "task": f"task{task}",
                "cell": names[cell], "index": str(index), "seed": str(state),
            }  # fmt: skip
            parts = templates[(cell != 0, passed)]
            batch.append("".join(values.get(p, p) if i % 2 else p for i, p in enumerate(parts)))
            if len(batch) >= 10_000:
                fh.write("\n".join(batch) + "\n")
                batch = []
        if batch:
            fh.write("\n".join(batch) + "\n")
    return path.stat().st_size


if __name__ == "__main__":
    import sys

    size = write_journal(Path(sys.argv[1]), int(sys.argv[2]), steps=int(sys.argv[3]))
    print(json.dumps({"bytes": size}))
