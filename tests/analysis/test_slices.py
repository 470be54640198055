"""Root causes by tag, counted per distinct (tags, status, cause) of the rows, are what counting
row by row gave: the same counts, and every dict's keys in the same order."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoseval.analysis.slices import UNTAGGED, VetoItem, _by_tag, _vetoes
from chaoseval.store.columns import Group
from tests.analysis.test_pairs import _journal


def _row_by_row(g: Any) -> Any:
    """What _by_tag did before: one row at a time."""
    by_tag: dict[str, Counter[str]] = defaultdict(Counter)
    tag_trials: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    tag_sets = [tags or (UNTAGGED,) for tags in g.t.vocab["tags"]]
    causes = g.t.vocab["root_cause"]
    for code, st_, rc in zip(
        g["tags"].tolist(), g["status"].tolist(), g["root_cause"].tolist(), strict=True
    ):
        for tag in tag_sets[code] if code >= 0 else (UNTAGGED,):
            if st_ != 2:
                entry = tag_trials[tag]
                entry[0] += 1
                entry[1] += st_ == 1
            if st_ == 1 and rc >= 0 and causes[rc]:
                by_tag[tag][causes[rc]] += 1
    return dict(by_tag), {t: (v[0], v[1]) for t, v in tag_trials.items()}


class _Group(SimpleNamespace):
    def __getitem__(self, column: str) -> np.ndarray:
        out: np.ndarray = self.t.col[column]
        return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 300), st.integers(1, 4), st.integers(0, 300))
def test_by_tag_counts_as_row_by_row(seed: int, rows: int, tag_sets: int, causes: int) -> None:
    rng = random.Random(seed)
    vocab = {
        "tags": [(), ("a", "b"), ("b",), ("c", "a")][:tag_sets],
        "root_cause": ["x", "", "y", *(f"c{i}" for i in range(causes))],
    }
    col = {
        "tags": np.array([rng.randint(-1, tag_sets - 1) for _ in range(rows)], np.int32),
        "status": np.array([rng.randint(0, 2) for _ in range(rows)], np.int8),
        "root_cause": np.array(
            [rng.choice([-1, 0, 1, rng.randint(-1, causes + 2)]) for _ in range(rows)], np.int32
        ),
    }
    g = _Group(t=SimpleNamespace(vocab=vocab, col=col))
    want, got = _row_by_row(g), _by_tag(g)  # type: ignore[arg-type]
    assert got == want
    assert [(k, list(v.items())) for k, v in got[0].items()] == [
        (k, list(v.items())) for k, v in want[0].items()
    ]
    assert list(got[1].items()) == list(want[1].items())


def test_veto_items_are_each_rows_by_trial_id() -> None:
    """The veto items of a journal's rows, or of some of them, named as Trials names them, in
    trial-id order (issue 41: the same trials in another line order give the same list)."""
    t = _journal(3, 12, [1, 2])
    everything = Group.all(t)
    for g in (everything, everything.where(np.arange(len(t)) % 3 == 1)):
        want = [
            VetoItem(kind, t.trial_id(row), t.value("scenario", row), t.value("cell", row), d)
            for row, items in t.vetoes.items()
            if row in set(g.rows.tolist())
            for kind, d in items
        ]
        want.sort(key=lambda v: v.trial_id)
        assert want and _vetoes(g) == want
