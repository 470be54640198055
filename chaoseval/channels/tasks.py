"""A task group that hosts background work (a simulated policy) beside the code using it.

anyio wraps anything raised in a task group's body in an ExceptionGroup; the agent's own error
(a tool error that ends its episode, an SDK error) must reach the trial as itself, so it is
carried out of the group unwrapped. Cancellation (a BaseException) is left to anyio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup


@asynccontextmanager
async def hosting() -> AsyncIterator[TaskGroup]:
    """Yield a task group whose background tasks are cancelled when the body ends."""
    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        try:
            yield tg
        except Exception as exc:
            error = exc
        finally:
            tg.cancel_scope.cancel()
    if error is not None:
        raise error
