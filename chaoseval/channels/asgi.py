"""Serve an ASGI app on 127.0.0.1 from inside the running event loop, with uvicorn.

The channels run in the trial's own event loop (the ToolBox, its clock and the fault ledger are
only ever touched from there), so uvicorn is driven as a task rather than as a process. It must
not take over the process: no signal handlers (Ctrl-C belongs to the run), no logging setup.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Iterator

import anyio
import uvicorn
from starlette.types import ASGIApp

HOST = "127.0.0.1"


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the run handles Ctrl-C; a served channel must not swallow it


@contextlib.asynccontextmanager
async def serve_asgi(app: ASGIApp, *, shutdown_grace: float = 1.0) -> AsyncIterator[str]:
    """Serve ``app`` on a free port of 127.0.0.1 for the block; yields ``http://127.0.0.1:PORT``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, 0))  # bound here, so the port is known before uvicorn starts
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,
        # uvicorn annotates whole seconds but waits with asyncio, which takes a float.
        timeout_graceful_shutdown=shutdown_grace,  # type: ignore[arg-type]
    )
    server = _Server(config)
    try:
        async with _unwrapped(), anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            while not server.started:
                if tg.cancel_scope.cancel_called:  # pragma: no cover - serve() failed
                    break
                await anyio.sleep(0.002)
            try:
                yield f"http://{HOST}:{port}"
            finally:
                server.should_exit = True
    finally:
        sock.close()


@contextlib.asynccontextmanager
async def _unwrapped() -> AsyncIterator[None]:
    """Whatever the block raised, not the task group's wrapping of it: a caller (the judge, a
    test) must see the agent's own ToolTimeout or crash, not an exception group."""
    try:
        yield
    except BaseExceptionGroup as group:
        raise single(group) from None


def single(group: BaseExceptionGroup) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
