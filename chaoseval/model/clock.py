"""Trial clocks: wall time for real agents, virtual time for simulated ones.

Both answer ``now()`` (the world's calendar time, which a clock-skew perturbation may move),
``monotonic()``, ``sleep()`` and ``deadline()``. With a virtual clock an injected 8-second
delay costs nothing, so a matrix full of slow tools still finishes in seconds.
"""

from __future__ import annotations

import asyncio
import functools
import math
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

import anyio
from freezegun import freeze_time

ClockMode = Literal["virtual", "real"]


class Clock(Protocol):
    mode: ClockMode

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...

    def deadline(self, seconds: float) -> AbstractContextManager[None]: ...

    def skew(self, delta: timedelta) -> None: ...

    def nominal_now(self) -> datetime: ...


class _WorldTime:
    """Calendar time = the scenario's start instant + elapsed trial time + any skew."""

    def __init__(self, start: datetime):
        self._start = start
        self._skew = timedelta(0)

    def skew(self, delta: timedelta) -> None:
        self._skew += delta

    def set_now(self, instant: datetime) -> None:
        self._skew = instant - self._start - timedelta(seconds=self.monotonic())

    def now(self) -> datetime:
        return self._start + self._skew + timedelta(seconds=self.monotonic())

    def nominal_now(self) -> datetime:
        """What the time would be without any skew: the date the task was written for."""
        return self._start + timedelta(seconds=self.monotonic())

    def monotonic(self) -> float:  # pragma: no cover - overridden
        raise NotImplementedError


class VirtualClock(_WorldTime):
    """Time advances only when someone sleeps. Deadlines are checked against virtual time."""

    mode: ClockMode = "virtual"

    def __init__(self, start: datetime):
        super().__init__(start)
        self._t = 0.0
        self._deadlines: list[float] = []

    def monotonic(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        self._t += max(0.0, seconds)

    async def sleep(self, seconds: float) -> None:
        limit = min(self._deadlines, default=math.inf)
        target = self._t + max(0.0, seconds)
        if target >= limit:
            self._t = limit
            raise TimeoutError("virtual deadline reached")
        self._t = target
        await anyio.lowlevel.checkpoint()

    def deadline(self, seconds: float) -> AbstractContextManager[None]:
        return _VirtualDeadline(self, seconds)


class _VirtualDeadline:
    """A deadline on a virtual clock (a class: a generator context manager costs several
    times as much, and every trial and tool call enters one)."""

    __slots__ = ("_clock", "_seconds")

    def __init__(self, clock: VirtualClock, seconds: float):
        self._clock, self._seconds = clock, seconds

    def __enter__(self) -> None:
        self._clock._deadlines.append(self._clock._t + self._seconds)

    def __exit__(self, *exc: object) -> None:
        self._clock._deadlines.pop()


class RealClock(_WorldTime):
    """Wall-clock time; deadlines are anyio cancel scopes."""

    mode: ClockMode = "real"

    def __init__(self, start: datetime):
        super().__init__(start)
        self._t0 = anyio.current_time() if _in_event_loop() else 0.0

    def monotonic(self) -> float:
        # In an asyncio task (every trial runs in one), what anyio.current_time() answers
        # there, the loop's time, read without anyio's backend lookup and its task probe (a
        # TaskInfo made per read; a tool call reads the clock three times): the same value.
        loop = _running_loop()
        if loop is not None and _task_of(loop) is not None:
            return loop.time() - self._t0
        return (anyio.current_time() - self._t0) if _in_event_loop() else 0.0

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)

    @contextmanager
    def deadline(self, seconds: float) -> Iterator[None]:
        with anyio.fail_after(seconds):
            yield


# RealClock.monotonic's two questions, without the frames around them: the running loop (None
# outside one, where get_running_loop raises), and its current task. On 3.11
# ``asyncio.current_task(loop)`` is a Python function answering ``_current_tasks.get(loop)``
# (most of a clock read); from 3.12 it is C, and the dict is not its answer everywhere after.
_running_loop = asyncio.events._get_running_loop
_task_of: Any = (
    asyncio.tasks._current_tasks.get  # type: ignore[attr-defined]
    if sys.version_info < (3, 12)
    else asyncio.current_task
)


def _in_event_loop() -> bool:
    try:
        anyio.get_current_task()
    except Exception:
        return False
    return True


# Packages whose modules a frozen block skips. freezegun patches every loaded module that holds
# a clock function, calling dir() on each at every freeze: ~100 ms a freeze once the OpenAI SDK
# (1000 modules), scipy, Ray and Playwright are loaded (as in a test session), and its first
# look at scipy imports all of scipy's lazy submodules (~2 s of CPU). None of these packages
# builds a world or runs a tool body, the code a frozen block is for; code they call directly
# (within freezegun's five frames) reads the real clock, so none sits on a tool's call path
# (servers such as starlette, mcp and anyio, which call the tools, are not listed).
UNFROZEN = (
    "openai", "scipy", "numpy", "ray", "playwright", "hypothesis", "requests", "urllib3",
    "filelock", "google", "grpc", "opentelemetry", "cryptography", "pygments", "rich", "typer",
    "click", "yaml",
)  # fmt: skip


def frozen_at(instant: datetime) -> AbstractContextManager[Any]:
    """freezegun's freeze at ``instant`` (datetime, date and time answer it) for the code a
    world or a tool runs, without patching the packages in ``UNFROZEN``."""
    _import_public_names()
    return freeze_time(instant, ignore=list(UNFROZEN))


@functools.cache
def _import_public_names() -> None:
    """Import what ``chaoseval``'s lazy attributes name, before any freeze: freezegun reads
    every attribute of every module it patches, and reading one of these imports its module,
    whose pydantic models would then be built while ``datetime`` is freezegun's class (a
    PydanticSchemaGenerationError)."""
    package = sys.modules["chaoseval"]  # this module's own package (no import: no circle)
    for name in package.__all__:
        getattr(package, name)


def round6(seconds: float) -> float:
    """``round(seconds, 6)``, the same float, as records keep seconds (a step's latency, a
    trial's simulated time): a virtual clock's 0.0 as it is, else the six-place digits read
    back. Both take those digits from dtoa's mode 3, correctly rounded from the exact binary
    value, and read them with its strtod; round() passes through C's snprintf between the two
    (most of its cost, on every model request)."""
    if seconds == 0.0 and type(seconds) is float:
        return seconds
    return float(f"{seconds:.6f}")
