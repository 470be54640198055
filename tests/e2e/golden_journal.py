"""The golden journals: proof that moving code did not change behaviour.

The same command and seed must write the same journal before and after a refactor, apart from
what differs between any two runs (run id, timestamps, durations, versions, file locations).
``python -m tests.e2e.golden_journal`` regenerates the committed files; do that only in a
commit that says which behaviour changed (and bumps SCHEMA_VERSION when records change).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).parent / "golden"
AGENTS = ("naive", "resilient")
# A subset of `make demo`: every bundled scenario, the whole catalogue, 2 trials per cell,
# on the virtual clock (the simulated agents), so the run is fast and fully deterministic.
CATALOGUE = (
    "latency",
    "timeout",
    "malformed",
    "layout_shift",
    "modal",
    "sampling",
    "stale_memory",
    "clock_skew",
    "drift",
)
# Keys whose values differ between two runs of the same command by design.
VOLATILE = frozenset(
    {
        "run_id",
        "created_at",
        "started_at",
        "wall_seconds",
        "chaoseval_version",
        "python",
        "packages",
        # A scenario file's sha256 (RunManifest's ScenarioInfo) names the file's bytes, as its
        # path names its place: a comment edited in a bundled scenario changes no behaviour.
        "sha256",
    }
)


def run_args(agent: str, journal: Path) -> list[str]:
    # A wall budget far above any trial's (the default is 30 s on the virtual clock): on a
    # loaded machine a trial sharing its worker with others took 30 s of wall time and was
    # recorded as a hang, which no refactor caused. The budget is not in the journal.
    args = ["run", "--agent", agent, "--trials", "2", "--seed", "7", "--trial-timeout", "600"]
    for name in CATALOGUE:
        args += ["-p", name]
    return [*args, "--journal", str(journal), "--overwrite"]


def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in VOLATILE:
                continue
            # Scenario sources are absolute paths: keep only the file name.
            if key == "source" and isinstance(item, str):
                item = Path(item).name
            out[key] = _mask(item)
        return out
    if isinstance(value, list):
        return [_mask(item) for item in value]
    return value


def normalize(journal: Path) -> list[str]:
    """The journal as canonical JSON lines: masked, keys sorted, trials sorted by id."""
    records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    records.sort(key=lambda r: (r.get("type") != "manifest", r.get("trial_id", "")))
    return [json.dumps(_mask(r), sort_keys=True) for r in records]


def produce(agent: str, workdir: Path) -> list[str]:
    journal = workdir / f"{agent}.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "chaoseval", *run_args(agent, journal)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"chaoseval run failed ({proc.returncode}):\n{proc.stderr}")
    return normalize(journal)


def golden_path(agent: str) -> Path:
    return GOLDEN_DIR / f"{agent}.jsonl.gz"


def read_golden(agent: str) -> list[str]:
    with gzip.open(golden_path(agent), "rt") as fh:
        return fh.read().splitlines()


def write_golden(agent: str, lines: list[str]) -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    # mtime=0 keeps the compressed bytes identical when the content is.
    with (
        open(golden_path(agent), "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh,
    ):
        fh.write(("\n".join(lines) + "\n").encode())


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in AGENTS:
            write_golden(name, produce(name, Path(tmp)))
            print(f"wrote {golden_path(name)}")
