"""The plan indices a worker pool still has to hand out, without a tuple per trial."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection

Item = tuple[int, bool, bool]  # (plan index, queued again, suspect)


class TrialQueue:
    """Plan indices in order, after any queued again: the deque operations the pools use,
    over a counter for the fresh ones (a million-trial run holds no million tuples)."""

    def __init__(self, count: int):
        self._again: deque[Item] = deque()
        self._next, self._count = 0, count

    def __len__(self) -> int:
        return len(self._again) + self._count - self._next

    def __getitem__(self, i: int) -> Item:
        """The first item (the only one the pools look at before taking it)."""
        if i != 0 or not self:
            raise IndexError(i)
        return self._again[0] if self._again else (self._next, False, False)

    def popleft(self) -> Item:
        if self._again:
            return self._again.popleft()
        if self._next >= self._count:
            raise IndexError("pop from an empty queue")
        self._next += 1
        return (self._next - 1, False, False)

    def appendleft(self, item: Item) -> None:
        """Queue a trial again, first in line."""
        self._again.appendleft(item)

    def take(self, busy: bool, may_start: Callable[[], bool]) -> tuple[int, bool] | None:
        """The next (plan index, suspect) for a worker, or None when none fits it now.

        A suspect (a trial queued again after a worker died under it with no culprit named)
        goes only to a worker with nothing in flight (``busy`` False), so the next death names
        it. A fresh trial past the run's budget (``may_start`` False) is dropped: skipped,
        never started. Both pools (process and Ray) hand out trials by this one rule.
        """
        while self:
            index, again, suspect = self[0]
            if suspect and busy:
                return None
            self.popleft()
            if again or may_start():
                return index, suspect
        return None

    def settle(self, lost: Collection[int], blame: int | None) -> tuple[int | None, list[int]]:
        """A worker died holding the trials ``lost``: the one to record (``blame``, or the only
        one it held; None when nobody can be blamed), and the others, queued again first in
        line (as suspects when nobody was blamed, so each runs alone next)."""
        if blame is None and len(lost) == 1:
            blame = next(iter(lost))
        again = [index for index in sorted(lost, reverse=True) if index != blame]
        for index in again:
            self.appendleft((index, True, blame is None))
        return (blame if blame in lost else None), again
