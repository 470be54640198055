"""The event loop trials run on: uvloop where it is installed (a dependency on Linux and macOS).

The channels' servers (uvicorn), the forwarding client (aiohttp) and an in-process agent's
sockets all run on a trial's loop, in the runner's process or in a worker's. uvloop's
transports cost each request a quarter to a third less CPU than asyncio's (make bench:
bench_wire, every kind, side by side). Where uvloop is not installed, asyncio's own loop.

While the loop runs, what the process held when it started (its modules, the pydantic and
mcp schemas, the loaded scenarios) is frozen out of the garbage collector's passes
(``gc.freeze``): the servers' requests, many in flight at once, promote enough young objects
that a full pass comes every few thousand requests, and a full pass over that startup heap
took 90 to 130 ms here (every server stalled meanwhile: the wire's p99) against 9 ms over
what the run itself made. Unfrozen when the loop ends, so garbage made before it is still
collected, later.

Meanwhile the collector's youngest generation waits for :data:`YOUNG` new containers, not
Python's 700: at -j 8 some 1500 objects of the requests in flight (coroutines, frames, events)
are always young, so every young pass walked them all and promoted them, and the few records a
tool call keeps (its step) tipped that over every ~18 requests; with the older passes it
set off, the collector took ~5% of an MCP request's instructions (make bench: bench_wire,
counted by callgrind) where the bare SDK server, which keeps nothing, took well under 1%.
At most that many more young objects wait for a pass: a few MB. Restored when the loop ends.

The loop's result is handed back beside its main task, not as the task's result: on the main
thread asyncio.Runner.run asks ``signal.getsignal`` whether its SIGINT handler is still set,
and on Python 3.11 that formats a ValueError with the handler's repr, which holds the main
task's and so its result's: every trial's record written out as text and thrown away (172 ms
at the end of a trial of 6,000 steps, bench_wire's).
"""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable
from importlib.util import find_spec
from typing import Any, TypeVar

import anyio

T = TypeVar("T")

# New containers the collector's youngest generation waits for while trials run (Python: 700).
YOUNG = 10_000


def loop_options() -> dict[str, Any]:
    """anyio's ``backend_options`` for a loop that runs trials."""
    return {"use_uvloop": True} if find_spec("uvloop") is not None else {}


def run_loop(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``anyio.run(func, *args)`` on the trials' loop, the startup heap frozen meanwhile and
    the youngest generation's threshold :data:`YOUNG`."""
    handed: list[T] = []

    async def main() -> None:
        handed.append(await func(*args))  # (the task's own result: None, whose repr is cheap)

    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(YOUNG, thresholds[0]), *thresholds[1:])
    try:
        anyio.run(main, backend_options=loop_options())
        return handed[0]
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
