"""Per-task (n, c) of one cell as arrays indexed by task code: scored trials n and passed c.

A cell of a journal of 100k tasks has 100k of them; as a dict of names to tuples each cell
held ~12 MB for the whole report, and every comparison against clean built another. The
mapping reads as the dict did (task name -> (n, c), in the order the tasks first appear)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from chaoseval.store.columns import Group, Trials

__all__ = ["CountsByTask", "name_ranks"]


def name_ranks(names: Sequence[str]) -> np.ndarray:
    """Each name's place among ``names`` sorted (as Python sorts them): codes ordered by name
    without a list of the names themselves."""
    out = np.empty(len(names), np.int64)
    out[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    return out


class _Names:
    """A journal's task names and, once asked for, each one's place among them sorted."""

    def __init__(self, t: Trials) -> None:
        self.t = t
        self.names: list[str] = t.vocab["scenario"]
        self._ranks: np.ndarray | None = None

    def ranks(self) -> np.ndarray:
        if self._ranks is None:
            self._ranks = name_ranks(self.names)
        return self._ranks


class CountsByTask(Mapping[str, tuple[int, int]]):
    """Task name -> (n, c), in the order the tasks first appear among the rows counted."""

    def __init__(self, names: _Names, codes: np.ndarray, n: np.ndarray, c: np.ndarray) -> None:
        self._names, self.codes, self.n, self.c = names, codes, n, c
        self._at: np.ndarray | None = None

    @classmethod
    def of(cls, g: Group) -> CountsByTask:
        """The counts of the rows of ``g``, per task."""
        sc, st = g["scenario"], g["status"]
        uniq, first, inverse = np.unique(sc, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")

        def per(weights: np.ndarray) -> np.ndarray:
            return np.bincount(inverse, weights=weights, minlength=len(uniq))[order].astype(
                np.int64
            )

        return cls(_Names(g.t), uniq[order].astype(np.int64), per(st != 2), per(st == 0))

    def _where(self, keep: np.ndarray) -> CountsByTask:
        return CountsByTask(self._names, self.codes[keep], self.n[keep], self.c[keep])

    def without(self, tasks: Iterable[str]) -> CountsByTask:
        """These counts but for ``tasks``."""
        t = self._names.t
        codes = [c for c in (t.code("scenario", name) for name in tasks) if c >= 0]
        return self._where(~np.isin(self.codes, codes)) if codes else self

    def among(self, other: CountsByTask) -> CountsByTask:
        """These counts on the tasks ``other`` has too (in this one's order)."""
        return self._where(np.isin(self.codes, other.codes))

    def by_name(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The task names sorted (as ``sorted(counts)``), and n and c in that order."""
        order = np.argsort(self._names.ranks()[self.codes], kind="stable")
        names = self._names.names
        return [names[c] for c in self.codes[order].tolist()], self.n[order], self.c[order]

    def __len__(self) -> int:
        return len(self.codes)

    def __iter__(self) -> Iterator[str]:
        names = self._names.names
        return (names[c] for c in self.codes.tolist())

    def _position(self, task: object) -> int:
        if self._at is None:
            self._at = np.full(len(self._names.names), -1, np.int64)
            self._at[self.codes] = np.arange(len(self.codes))
        code = self._names.t.code("scenario", task)
        return int(self._at[code]) if code >= 0 else -1

    def __getitem__(self, task: str) -> tuple[int, int]:
        i = self._position(task)
        if i < 0:
            raise KeyError(task)
        return int(self.n[i]), int(self.c[i])

    def __contains__(self, task: object) -> bool:
        return self._position(task) >= 0

    def __repr__(self) -> str:
        # As the dict it replaces shows itself: results are compared by repr (a resumed run's
        # metrics against an uninterrupted one's), and an object address never matches.
        return repr(dict(self.items()))
