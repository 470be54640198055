"""The judge's audit: what reviewers' labels say of the judge, and pass^1 corrected for it.

Reviewers label a sample of trials (``chaoseval sample``'s sheet, read back by ``chaoseval
review``); each label says whether the trial truly passed. Per cell, the scored trials split
into two strata by the judge's verdict, and the reviewed trials of a stratum are a simple
random sample of it (``sample`` draws them so, stratified by cell and verdict). Then:

- the passes overturned (a judge's pass the reviewer failed) and the failures overturned are
  ``x`` of ``m`` reviewed; how many of the stratum's ``N`` trials are, is bounded by the exact
  hypergeometric interval (Clopper-Pearson's construction on the finite stratum: ``K`` is in
  the interval when neither tail of ``x`` is below alpha/2), which closes on the true count
  once every trial of the stratum is reviewed;
- the corrected pass^1 is the stratified estimate ``J q_pass + (1 - J) q_fail``: ``J`` the
  judge's pass^1 (the macro share of the cell's trials the judge passed), ``q`` the share of a
  stratum the reviewers found passed. Its interval joins the strata's exact intervals, each
  at level 1 - alpha / r (Bonferroni over the r strata still uncertain), so it covers at least
  at the nominal level whatever the judge's error; a stratum nobody reviewed keeps the
  judge's verdict, and the note says so.

Assumptions, said in docs/SPOT_CHECKS.md: the reviewer is right; the labelled trials of a
stratum are a random sample of it (a reviewer who leaves the hard ones blank breaks it); with
unequal trial counts per task the stratum's share of passes is taken as the same in every task
(a ratio estimate; exact when every task has the same n, as a matrix run has). The scope is
these trials, not tasks like these. Statuses and gates keep using the judge's figures.

pass^k for k > 1 is corrected by chaoseval.analysis.audit_passk (a relabelling drawn from a
hierarchical model of the judge's errors within tasks): its own method and assumptions there.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chaoseval.analysis.audit_passk import PassK, corrected_pass_hat
from chaoseval.store.columns import Trials
from chaoseval.store.lite import STATUS
from chaoseval.store.reviews import Label, latest

__all__ = [
    "Agreement",
    "Audit",
    "CellAudit",
    "Stratum",
    "audit",
    "corrected_interval",
    "count_interval",
    "kappa",
]

METHOD = (
    "stratified by the judge's verdict, exact hypergeometric intervals per stratum joined "
    "with Bonferroni; on these trials; the reviewer taken as right"
)


def count_interval(total: int, drawn: int, hits: int, alpha: float) -> tuple[int, int]:
    """How many of a finite stratum of ``total`` items have a property, when ``hits`` of a
    simple random sample of ``drawn`` have it: the exact two-sided interval at level 1 -
    alpha (every count whose tails at ``hits`` are both above alpha / 2)."""
    if not 0 <= hits <= drawn <= total:
        raise ValueError(f"need 0 <= hits <= drawn <= total, got {hits}, {drawn}, {total}")
    if drawn == 0:
        return 0, total
    # Only a journal with labels gets here: scipy.stats costs ~0.7 s to import (cli imports).
    from scipy.stats import hypergeom  # type: ignore[import-untyped]  # scipy ships no stubs

    k = np.arange(total + 1)
    upper_tail = hypergeom.sf(hits - 1, total, k, drawn)  # P(X >= hits | K = k)
    lower_tail = hypergeom.cdf(hits, total, k, drawn)  # P(X <= hits | K = k)
    kept = np.flatnonzero((upper_tail > alpha / 2) & (lower_tail > alpha / 2))
    # The observed count is always kept (both tails are at least its probability, and the
    # test never rejects the count it saw with certainty); guard against rounding anyway.
    if not len(kept):
        return hits, hits + (total - drawn)
    return int(kept[0]), int(kept[-1])


@dataclass(frozen=True)
class Stratum:
    """The scored trials of one cell the judge gave one verdict, and their review."""

    judge: str  # passed | failed
    trials: int  # N: the stratum's trials
    reviewed: int  # m: the labelled ones
    overturned: int  # the labelled ones the reviewer gave the other verdict
    share: float  # the stratum's weight in the cell's pass^1 (J for passes, 1 - J failures)

    @property
    def true_passes(self) -> int:
        """Reviewed trials the reviewer passed."""
        return self.reviewed - self.overturned if self.judge == "passed" else self.overturned

    def pass_share(self, alpha: float) -> tuple[float, float, float]:
        """(estimate, low, high) of the share of the stratum that truly passed; unreviewed:
        the judge's verdict, exactly."""
        if not self.trials:
            return 0.0, 0.0, 0.0
        if not self.reviewed:
            v = 1.0 if self.judge == "passed" else 0.0
            return v, v, v
        lo, hi = count_interval(self.trials, self.reviewed, self.true_passes, alpha)
        return self.true_passes / self.reviewed, lo / self.trials, hi / self.trials

    def overturn_rate(self, alpha: float) -> tuple[float, float, float] | None:
        """(estimate, low, high) of the share of the stratum the judge got wrong."""
        if not self.reviewed:
            return None
        lo, hi = count_interval(self.trials, self.reviewed, self.overturned, alpha)
        return self.overturned / self.reviewed, lo / self.trials, hi / self.trials

    @property
    def uncertain(self) -> bool:
        return 0 < self.reviewed < self.trials

    def to_json(self, alpha: float) -> dict[str, Any]:
        rate = self.overturn_rate(alpha)
        return {
            "judge": self.judge,
            "trials": self.trials,
            "reviewed": self.reviewed,
            "overturned": self.overturned,
            "overturned_share": None if rate is None else list(rate),
        }


def corrected_interval(strata: Sequence[Stratum], ci: float) -> tuple[float, float, float]:
    """(estimate, low, high) of the cell's true pass^1: each stratum's share of true passes,
    weighted by its share of the cell, the uncertain strata's intervals at ci Bonferroni'd."""
    r = sum(s.uncertain for s in strata)
    alpha = (1 - ci) / max(r, 1)
    est = low = high = 0.0
    for s in strata:
        e, lo, hi = s.pass_share(alpha)
        est, low, high = est + s.share * e, low + s.share * lo, high + s.share * hi
    return est, min(low, est), max(high, est)


@dataclass
class CellAudit:
    cell: str
    judge_mean: float  # the judge's pass^1 (the report's mean)
    passes: Stratum
    failures: Stratum
    corrected: tuple[float, float, float]  # estimate, low, high
    ci: float
    # pass^k for each k > 1 of the report, the judge's and corrected (audit_passk).
    pass_hat: list[PassK] = field(default_factory=list)
    pass_hat_notes: list[str] = field(default_factory=list)

    @property
    def reviewed(self) -> int:
        return self.passes.reviewed + self.failures.reviewed

    def notes(self) -> list[str]:
        out = []
        for s in (self.passes, self.failures):
            if s.trials and not s.reviewed:
                out.append(
                    f"{self.cell}: no judge-{s.judge} trial reviewed; the corrected pass^1 "
                    f"(and pass^k) keeps the judge's {s.judge} verdicts as they are"
                )
        return out

    def to_json(self) -> dict[str, Any]:
        alpha = 1 - self.ci
        return {
            "judge_pass^1": self.judge_mean,
            "corrected_pass^1": dict(zip(("estimate", "low", "high"), self.corrected, strict=True)),
            "passes": self.passes.to_json(alpha),
            "failures": self.failures.to_json(alpha),
            "corrected_pass^k": [p.to_json() for p in self.pass_hat],
            "corrected_pass^k_notes": self.pass_hat_notes,
        }


@dataclass(frozen=True)
class Agreement:
    """Two reviewers on the trials both labelled: raw agreement and Cohen's kappa."""

    a: str
    b: str
    trials: int
    agree: int
    kappa: float | None  # None when chance agreement is 1 (both gave one verdict throughout)


def kappa(x: Sequence[str], y: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items."""
    n = len(x)
    if not n or n != len(y):
        raise ValueError("kappa needs two label lists of one non-zero length")
    observed = sum(a == b for a, b in zip(x, y, strict=True)) / n
    cx, cy = Counter(x), Counter(y)
    chance = sum(cx[v] * cy[v] for v in cx) / (n * n)
    if chance >= 1:
        return None
    return (observed - chance) / (1 - chance)


def agreements(labels: Sequence[Label]) -> list[Agreement]:
    """Each pair of reviewers with trials in common, each reviewer's last label per trial."""
    mine: dict[str, dict[str, str]] = {}
    for x in labels:
        mine.setdefault(x.reviewer, {})[x.trial_id] = x.verdict
    out = []
    for a, b in itertools.combinations(sorted(mine), 2):
        common = sorted(set(mine[a]) & set(mine[b]))
        if not common:
            continue
        va, vb = [mine[a][t] for t in common], [mine[b][t] for t in common]
        agree = sum(p == q for p, q in zip(va, vb, strict=True))
        out.append(Agreement(a, b, len(common), agree, kappa(va, vb)))
    return out


@dataclass
class Audit:
    labels: int  # label lines read (every one, repeats included)
    reviewers: list[str]
    cells: list[CellAudit]
    agreement: list[Agreement]
    ci: float = 0.95
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": METHOD,
            "ci": self.ci,
            "labels": self.labels,
            "reviewers": self.reviewers,
            "cells": {c.cell: c.to_json() for c in self.cells},
            "agreement": [a.__dict__ for a in self.agreement],
            "notes": self.notes,
        }


def audit(
    t: Trials,
    labels: Sequence[Label],
    counts: Mapping[str, Mapping[str, tuple[int, int]]],
    ci: float = 0.95,
    ks: Sequence[int] = (),
) -> Audit | None:
    """The audit of the cells (``counts``: cell -> task -> (n, c), the tasks its metrics use)
    from ``labels``, with pass^k corrected for each k > 1 of ``ks``; None without labels."""
    if not labels:
        return None
    last = latest(labels)
    reviewed, notes = _reviewed_rows(t, last)
    cells = []
    for cell, tasks in counts.items():
        got = reviewed.get(cell, {})
        a = _cell_audit(cell, tasks, {k: v for k, v in got.items() if k[0] in tasks}, ci, ks)
        if a is not None:
            cells.append(a)
            notes += a.notes()
    return Audit(
        labels=len(labels),
        reviewers=sorted({x.reviewer for x in labels}),
        cells=cells,
        agreement=agreements(labels),
        ci=ci,
        notes=notes,
    )


def _reviewed_rows(
    t: Trials, last: Mapping[str, Label]
) -> tuple[dict[str, dict[tuple[str, str], int]], list[str]]:
    """Per cell, counts keyed by (task, judge verdict): the trials whose last label counts,
    and by (task, "over:" + judge verdict) those the label overturned; with notes on the
    labels left out (trial gone, judged again since, not evaluable)."""
    names = {v: k for k, v in STATUS.items()}
    found: dict[str, dict[tuple[str, str], int]] = {}
    seen, stale, unscored, later = set(), 0, 0, 0
    # A sequential run's tables are its first-round trials (analysis.build): a label of a
    # later trial would be a trial the cell's counts do not hold.
    seq = t.manifest.sequential
    for row in range(len(t)):
        tid = t.trial_id(row)
        label = last.get(tid)
        if label is None:
            continue
        seen.add(tid)
        if seq is not None and int(t.col["index"][row]) >= seq.first:
            later += 1
            continue
        judge = names[int(t.col["status"][row])]
        if judge != label.judge:
            stale += 1  # the trial ran again (--resume) since the reviewer saw it
            continue
        if judge == "not_evaluable":
            unscored += 1
            continue
        by = found.setdefault(t.value("cell", row), {})
        task = t.value("scenario", row)
        by[(task, judge)] = by.get((task, judge), 0) + 1
        if label.verdict != judge:
            by[(task, "over:" + judge)] = by.get((task, "over:" + judge), 0) + 1
    notes = []
    if missing := len(set(last) - seen):
        notes.append(f"{missing} labelled trial(s) are not in the journal; left out")
    if stale:
        notes.append(f"{stale} label(s) saw another verdict than the journal's now; left out")
    if unscored:
        notes.append(f"{unscored} label(s) of not-evaluable trials; left out (never scored)")
    if later:
        notes.append(
            f"{later} label(s) of trials after the sequential run's first round; left out "
            "(its tables and pass^k are its first-round trials)"
        )
    return found, notes


def _cell_audit(
    cell: str,
    tasks: Mapping[str, tuple[int, int]],
    got: Mapping[tuple[str, str], int],
    ci: float,
    ks: Sequence[int],
) -> CellAudit | None:
    if not tasks or not got:
        return None
    judge_mean = float(np.mean([c / n for n, c in tasks.values() if n])) if tasks else 0.0
    n_pass = sum(c for _, c in tasks.values())
    n_fail = sum(n - c for n, c in tasks.values())

    def stratum(judge: str, trials: int, share: float) -> Stratum:
        m = sum(v for (_, j), v in got.items() if j == judge)
        x = sum(v for (_, j), v in got.items() if j == "over:" + judge)
        return Stratum(judge, trials, m, x, share)

    passes = stratum("passed", n_pass, judge_mean)
    failures = stratum("failed", n_fail, 1 - judge_mean)
    fixed = corrected_pass_hat(tasks, got, ks, ci, seed=cell)
    return CellAudit(cell, judge_mean, passes, failures, corrected_interval([passes, failures], ci),
                     ci, fixed.results, fixed.notes)  # fmt: skip
