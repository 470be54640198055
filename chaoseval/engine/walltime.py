"""The trials' wall-time limit: one event-loop timer for all of them, not one per trial.

Every trial runs its agent under a wall-time limit, so an agent awaiting something that never
comes still ends. ``anyio.fail_after`` schedules a loop timer per trial and cancels it when the
trial ends; but the loop drops cancelled timers only between its iterations, and trials that
never wait (a virtual-clock agent) run many to one iteration, so a fast run piled up a timer,
and the context it holds, per trial (memory that grew with the run: ~0.7 KB a trial), and
paid a heap push for each. Here a running trial's cancel scope sits in a dict, and one loop
callback, set for the earliest deadline, cancels the scopes past theirs: what anyio's own
deadline does (a loop callback calling ``scope.cancel()``), for a dict insert and delete.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import Callable
from types import TracebackType

import anyio


class WallLimit:
    """``with WallLimit(seconds) as limit: ...``; afterwards ``limit.expired`` tells whether
    the time ran out (the block was cancelled then); ``limit.scope.cancel()`` ends it early."""

    __slots__ = ("_seconds", "_timer", "deadline", "expired", "scope")

    def __init__(self, seconds: float):
        self._seconds = seconds
        self._timer: _Timer | None = None
        self.deadline = math.inf
        self.expired = False

    def __enter__(self) -> WallLimit:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another anyio backend: the scope's own deadline
            self.scope = anyio.CancelScope()
            self.scope.deadline = self.deadline = anyio.current_time() + self._seconds
        else:
            self.deadline = loop.time() + self._seconds
            self._timer = _timer_of(loop)
            self.scope = self._timer.scope_type()
        self.scope.__enter__()
        if self._timer is not None:
            self._timer.add(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if self._timer is not None:
            self._timer.remove(self)
        elif self.scope.cancel_called and anyio.current_time() >= self.deadline:
            self.expired = True
        return self.scope.__exit__(exc_type, exc, tb)


class _Timer:
    """The limits running on one event loop, and the one timer set for the earliest."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = weakref.ref(loop)  # the loop keeps the timer (its handle), not both ways
        self._limits: dict[int, WallLimit] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._at = math.inf
        # anyio.CancelScope() asks which backend runs (sniffio) on every call; on one loop
        # the answer never changes, so its scope class is looked up once.
        self.scope_type: Callable[[], anyio.CancelScope] = type(anyio.CancelScope())

    def add(self, limit: WallLimit) -> None:
        self._limits[id(limit)] = limit
        if limit.deadline < self._at:
            self._schedule(limit.deadline)

    def remove(self, limit: WallLimit) -> None:
        # Its timer stays set: it fires once, finds nothing due and moves to the earliest
        # deadline left (with a steady limit: about once per limit, however many trials).
        self._limits.pop(id(limit), None)

    def _schedule(self, at: float) -> None:
        loop = self.loop()
        if self._handle is not None:
            self._handle.cancel()
        self._handle, self._at = None, math.inf
        if loop is not None and not loop.is_closed():
            self._handle, self._at = loop.call_at(at, self._fire), at

    def _fire(self) -> None:
        self._handle, self._at = None, math.inf
        loop = self.loop()
        if loop is None:
            return
        now = loop.time()
        for key, limit in list(self._limits.items()):
            if limit.deadline <= now:
                del self._limits[key]
                limit.expired = True
                limit.scope.cancel()
        if self._limits:
            self._schedule(min(limit.deadline for limit in self._limits.values()))


_TIMERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Timer] = weakref.WeakKeyDictionary()


_last: _Timer | None = None  # the timer asked for last: one loop runs a whole run's trials


def _timer_of(loop: asyncio.AbstractEventLoop) -> _Timer:
    global _last
    timer = _last
    if timer is not None and timer.loop() is loop:  # a weak reference: no WeakKeyDictionary
        return timer
    timer = _TIMERS.get(loop)
    if timer is None:
        timer = _TIMERS[loop] = _Timer(loop)
    _last = timer
    return timer
