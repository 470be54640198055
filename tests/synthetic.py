"""Synthetic journals for the analysis and comparison tests: counts in, a manifest out."""

from __future__ import annotations

from datetime import UTC, datetime

from chaoseval.model.records import Cell, ModelSettings, RunManifest

Counts = dict[str, dict[str, tuple[int, int]]]  # counts[cell][task] = (n, c)


def manifest_for(counts: Counts, agent: str = "synthetic", run_id: str = "r") -> RunManifest:
    """The manifest a run with these cells, tasks and trial counts would have written."""
    return RunManifest(
        run_id=run_id,
        chaoseval_version="test",
        python="",
        packages={},
        agent=agent,
        model=ModelSettings(),
        seed=0,
        trials=max(n for t in counts.values() for n, _ in t.values()),
        ks=[1, 2],
        clock="virtual",
        scenarios=[{"id": t} for t in sorted({t for c in counts.values() for t in c})],
        cells=[Cell(name=c) for c in counts],
        concurrency=1,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
