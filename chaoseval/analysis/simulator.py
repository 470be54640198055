"""The user simulator's own failures, counted apart: trials an LLM user (``run
--user-model-endpoint``) broke are not evaluable with root cause ``user_simulator``; every view
says how many, in one line, beside (never inside) the agent's figures."""

from __future__ import annotations

from chaoseval.analysis.aggregate import Records
from chaoseval.store.columns import as_group

__all__ = ["CAUSE", "simulator_failures", "simulator_line"]

CAUSE = "user_simulator"


def simulator_failures(records: Records) -> dict[str, int]:
    """Per cell (first-seen order), the trials the user simulator broke; none: empty."""
    g = as_group(records)
    vocab = g.t.vocab["root_cause"]
    if CAUSE not in vocab or not len(g):
        return {}
    hit = g.where((g["status"] == 2) & (g["root_cause"] == vocab.index(CAUSE)))
    cells = hit.names("cell")
    return {c: cells.count(c) for c in dict.fromkeys(cells)}


def simulator_line(failures: dict[str, int]) -> str | None:
    """'user simulator failed in 2 trial(s) (not counted)', naming the cells; None: none."""
    n = sum(failures.values())
    if not n:
        return None
    where = ", ".join(f"{cell} {k}" for cell, k in failures.items())
    return f"user simulator failed in {n} trial(s) (not counted; {where})"
