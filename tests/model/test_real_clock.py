"""A real clock reads what anyio's clock reads, wherever it is asked (tool calls read it on
their hot path, straight from the running loop)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import anyio

from chaoseval.model.clock import RealClock

START = datetime(2026, 1, 2, tzinfo=UTC)


def test_in_a_task_it_reads_anyio_s_time_since_it_was_made() -> None:
    async def main() -> None:
        clock = RealClock(START)
        await anyio.sleep(0.01)
        before = anyio.current_time()
        read = clock.monotonic()
        after = anyio.current_time()
        assert before - clock._t0 <= read <= after - clock._t0
        assert read >= 0.01

    anyio.run(main)


def test_outside_a_task_it_reads_zero_as_before() -> None:
    assert RealClock(START).monotonic() == 0.0  # no loop at all
    seen: list[float] = []

    async def main() -> None:
        clock = RealClock(START)
        done = asyncio.Event()

        def callback() -> None:  # on the loop, in no task: anyio finds no task there
            seen.append(clock.monotonic())
            done.set()

        asyncio.get_running_loop().call_soon(callback)
        await done.wait()

    asyncio.run(main())
    assert seen == [0.0]


def test_the_fast_task_lookup_answers_as_asyncio_current_task() -> None:
    """monotonic's lookups (the running loop, its task) are asyncio's own answers: in a task,
    in a callback on the loop (no task) and with no loop."""
    from chaoseval.model import clock

    assert clock._running_loop() is None
    seen: list[tuple[object, object]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert clock._running_loop() is loop
        seen.append((clock._task_of(loop), asyncio.current_task(loop)))
        done = asyncio.Event()

        def callback() -> None:
            seen.append((clock._task_of(loop), asyncio.current_task(loop)))
            done.set()

        loop.call_soon(callback)
        await done.wait()

    asyncio.run(main())
    assert seen[0][0] is not None and seen[0][0] is seen[0][1]
    assert seen[1] == (None, None)
