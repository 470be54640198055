"""The one question a verdict answers, declared before the data: the primary metric.

A run records its primary metric (``run --primary``, ``primary =`` in the settings; pass^1
unless named) in its manifest, so ``report``, ``compare`` and ``gate`` judge by the same metric.
Verdicts come from the primary metric alone, Holm-adjusted across the cells. The other metrics
keep their intervals and are tested only in a fixed order after it (:func:`gatekeep`): in a
cell, metric r counts as significant only when every metric before it in :func:`hierarchy`
was (a fixed-sequence procedure), so asking four metrics never buys four chances at a claim.

A drop needs room to happen: :func:`at_floor` is the one test of "nothing to lose" that the
report's baseline note and compare's resilience verdict share.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from chaoseval.errors import ConfigError

__all__ = [
    "DEFAULT_PRIMARY",
    "FLOOR",
    "Primary",
    "at_floor",
    "gatekeep",
    "hierarchy",
    "parse_primary",
    "recorded_primary",
    "value_of",
]

DEFAULT_PRIMARY = "pass^1"
# A clean score at or below this leaves (almost) nothing to lose: such a baseline cannot show
# degradation, and a harness with it is never called more resilient.
FLOOR = 0.1
_METRIC = re.compile(r"^(mean|pass([@^])(\d+))$")


@dataclass(frozen=True)
class Primary:
    """A metric and its k: ``mean``, ``pass^k`` or ``pass@k``."""

    metric: str
    k: int | None

    @property
    def label(self) -> str:
        return "mean" if self.metric == "mean" else self.metric.replace("k", str(self.k))

    @property
    def kk(self) -> int:
        """The k the metric needs trials for (1 for the mean)."""
        return self.k or 1


def parse_primary(text: str | None, trials: int | None = None, where: str = "--primary") -> Primary:
    """``pass^1``, ``pass^5``, ``pass@2`` or ``mean`` (None: the default, pass^1); a k above
    ``trials`` cannot be estimated and is refused."""
    t = (text or DEFAULT_PRIMARY).strip().replace(" ", "")
    m = _METRIC.match(t)
    if m is None:
        raise ConfigError(
            f"{where} {text!r}: not a metric; use pass^K (all K succeed), pass@K (at least one "
            "of K) or mean, e.g. pass^1"
        )
    if m[1] == "mean":
        return Primary("mean", None)
    k = int(m[3])
    if k < 1:
        raise ConfigError(f"{where} {text!r}: k starts at 1 (pass^1, pass^5, ...)")
    if trials is not None and k > trials:
        raise ConfigError(
            f"{where} {text!r}: pass^{k} needs at least {k} trials per cell, the run has "
            f"{trials}; lower k or raise --trials"
        )
    return Primary("pass^k" if m[2] == "^" else "pass@k", k)


def value_of(summary: Any, p: Primary) -> float | None:
    """The primary metric from a :class:`~chaoseval.analysis.metrics.Summary` or a
    :class:`~chaoseval.analysis.metrics.Delta` (both have mean, pass_at and pass_hat)."""
    if p.metric == "mean":
        return summary.mean  # type: ignore[no-any-return]
    table = summary.pass_hat if p.metric == "pass^k" else summary.pass_at
    return table.get(p.kk)  # type: ignore[no-any-return]


def recorded_primary(manifest: Any) -> Primary:
    """The primary metric a run recorded (journals before schema 5 recorded none: pass^1)."""
    return parse_primary(getattr(manifest, "primary", None), where="the journal's primary")


def at_floor(clean: float | None) -> bool:
    """A clean score with (almost) nothing to lose: at or below :data:`FLOOR`. Such a baseline
    cannot show degradation, and such a harness is never called more resilient."""
    return clean is not None and clean <= FLOOR


def _rank(label: str) -> tuple[int, int]:
    if label == "mean":
        return (0, 0)
    return (1 if label.startswith("pass^") else 2, int(label[5:]))


def hierarchy(labels: Iterable[str], primary: str) -> list[str]:
    """The fixed testing order: the primary, then the mean, pass^k by increasing k, and pass@k
    by increasing k (the metrics further from a single trial's success come later)."""
    rest = sorted((x for x in set(labels) if x != primary), key=_rank)
    return [primary, *rest]


class Tested(Protocol):
    """What gatekeep needs of a comparison (chaoseval.analysis.degradation.Comparison)."""

    gated_by: str | None

    @property
    def label(self) -> str: ...

    @property
    def significant(self) -> bool: ...


def gatekeep(group: Sequence[Tested], primary: str) -> None:
    """Mark, in place, the comparisons of one cell that come after a non-rejection in the
    fixed order (:func:`hierarchy`): they keep their interval and p but are not tested
    (``gated_by`` names the metric that stopped the sequence)."""
    by_label = {c.label: c for c in group}
    # Without the primary's comparison nothing after it is tested.
    blocker: str | None = None if primary in by_label else primary
    for label in hierarchy(by_label, primary):
        cmp = by_label.get(label)
        if cmp is None:
            continue
        cmp.gated_by = blocker
        if blocker is None and not cmp.significant:
            blocker = label
