"""Big journals made of real records (issue 23), written once into a cache and reused.

A small real run of a bundled agent (``chaoseval run --agent AGENT -n 5 --seed 7 -p latency
-p timeout``: whole trajectories, tool and model steps, faults, vetoes, checks) is the source.
Its records are copied, as they are after the trial's identity, into a journal of about
``records`` trials over ``tasks`` tasks x its 3 cells: task ``t`` is source task ``t mod 44``
renamed ``<source>-x<t>``, trial ``i`` copies the source's trial ``i mod 5``, and each copy
gets the trial id, index, seed and world seed that ``chaoseval run`` would give it under the
new manifest (which lists every renamed task and its reference run). Lines come in the order a
run writes them (cells outermost, then tasks, then repeats) and are streamed to disk: the
writer holds one task's lines at a time.

A journal is kept under its name in the cache (``CHAOSEVAL_BENCH_CACHE``, by default
``~/.cache/chaoseval-bench``) and written again only when missing or when this generator's
``VERSION`` changes. Written to a temporary name first, so a stopped write leaves nothing that
looks finished.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
VERSION = 2  # bump when the journals written here change
CACHE = Path(os.environ.get("CHAOSEVAL_BENCH_CACHE", Path.home() / ".cache" / "chaoseval-bench"))
SOURCE_ARGS = ["-n", "5", "--seed", "7", "-p", "latency", "-p", "timeout"]
RUN_SEED = 7


def source_journal(agent: str, cache: Path = CACHE) -> Path:
    """The small real run of ``agent`` the big journals copy (run once, then cached)."""
    path = cache / f"source-v{VERSION}-{agent}.jsonl"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        subprocess.run(
            [str(Path(sys.executable).parent / "chaoseval"), "run", "--agent", agent,
             *SOURCE_ARGS, "--journal", str(tmp), "--overwrite"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        tmp.rename(path)
    return path


class _Source:
    """The source run's lines, each cut around the fields a copy changes."""

    def __init__(self, path: Path) -> None:
        with path.open(encoding="utf-8") as fh:
            self.manifest: dict[str, Any] = json.loads(fh.readline())
            self.lines = [line.rstrip("\n") for line in fh if line.strip()]
        self.tasks = [s["id"] for s in self.manifest["scenarios"]]
        self.cells = [c["name"] for c in self.manifest["cells"]]
        self.trials = int(self.manifest["trials"])
        # (task, cell, index) -> (the line's middle: tags, cell, perturbations; its tail)
        self.parts: dict[tuple[str, str, int], tuple[str, str]] = {}
        for line in self.lines:
            r = json.loads(line)
            key = (r["scenario"], r["cell"], r["index"])
            start = line.index(',"scenario_tags":') + 1
            end = line.index(',"index":')
            tail = line.index(',"agent":')
            self.parts[key] = (line[start:end], line[tail:])
            # The head is rebuilt by _line(): check it gives back the source line itself.
            self.schema = r["schema_version"]
            again = _line(r["run_id"], r["scenario"], r["cell"], r["index"], r["seed"],
                          r["world_seed"], *self.parts[key], self.schema)  # fmt: skip
            assert again == line, f"the source line of {key} does not rebuild"


def _line(run_id: str, task: str, cell: str, index: int, seed: int, world: int, middle: str,
          tail: str, schema: int) -> str:  # fmt: skip
    return (
        f'{{"type":"trial","schema_version":{schema},"run_id":"{run_id}",'
        f'"trial_id":"{task}/{cell}/{index}","scenario":"{task}",{middle},'
        f'"index":{index},"seed":{seed},"world_seed":{world}{tail}'
    )


def _manifest(src: _Source, run_id: str, names: list[str], trials: int) -> str:
    m = dict(src.manifest)
    by_id = {s["id"]: s for s in m["scenarios"]}
    refs = m.get("references") or {}
    origin = [src.tasks[t % len(src.tasks)] for t in range(len(names))]
    m["run_id"] = run_id
    m["trials"] = trials
    # The source's k values a journal of this many trials can report (report, gate and
    # compare refuse a k above the trials per cell): 1M records over 100k tasks is 4 trials.
    m["ks"] = [k for k in m["ks"] if k <= trials] or [1]
    m["scenarios"] = [{**by_id[o], "id": n} for n, o in zip(names, origin, strict=True)]
    if refs:
        m["references"] = {n: refs[o] for n, o in zip(names, origin, strict=True) if o in refs}
    return json.dumps(m, separators=(",", ":"))


def write(path: Path, agent: str, tasks: int, records: int, cache: Path = CACHE) -> int:
    """A journal of at least ``records`` trials over ``tasks`` tasks copied from ``agent``'s
    source run; returns its trial count."""
    from chaoseval.model.seeding import derive_seed, derive_seed_under

    src = _Source(source_journal(agent, cache))
    trials = max(1, math.ceil(records / (tasks * len(src.cells))))
    width = len(str(tasks - 1))
    names = [f"{src.tasks[t % len(src.tasks)]}-x{t:0{width}d}" for t in range(tasks)]
    run_id = f"bench{VERSION}-{agent}-{tasks}"
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8", buffering=1 << 20) as fh:
        fh.write(_manifest(src, run_id, names, trials) + "\n")
        for cell in src.cells:
            for t, name in enumerate(names):
                origin = src.tasks[t % len(src.tasks)]
                world = derive_seed(RUN_SEED, name, "world")
                out = []
                for i in range(trials):
                    middle, tail = src.parts[(origin, cell, i % src.trials)]
                    seed = derive_seed_under((RUN_SEED, name, "trial"), i)
                    out.append(_line(run_id, name, cell, i, seed, world, middle, tail, src.schema))
                out.append("")
                fh.write("\n".join(out))
    tmp.rename(path)
    return trials * tasks * len(src.cells)


def journal(agent: str, tasks: int, records: int, cache: Path = CACHE) -> tuple[Path, int, bool]:
    """The cached journal for these figures: (path, trials, whether it was written now)."""
    src = _Source(source_journal(agent, cache))
    trials = max(1, math.ceil(records / (tasks * len(src.cells))))
    path = cache / f"v{VERSION}-{agent}-{tasks}t-{records}r.jsonl"
    if path.exists():
        return path, trials * tasks * len(src.cells), False
    cache.mkdir(parents=True, exist_ok=True)
    return path, write(path, agent, tasks, records, cache), True


if __name__ == "__main__":  # python benchmarks/big_journals.py AGENT TASKS RECORDS
    sys.path.insert(0, str(ROOT))
    p, n, fresh = journal(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    size = p.stat().st_size / 2**30
    print(f"{p}: {n:,} trials, {size:.2f} GB ({'written' if fresh else 'cached'})")
