"""Messages between the runner and its worker processes: length-prefixed pickles on a
socket pair, and the small block of shared memory the runner reads without asking."""

from __future__ import annotations

import pickle
import struct
from typing import Any

from anyio.abc import ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream

HEADER = struct.Struct("!I")

# Shared doubles per worker (a multiprocessing RawArray): the worker's event loop writes
# HEARTBEAT every few tens of milliseconds; its watchdog thread writes BLOCKER, the index of
# the trial whose code holds the loop when the heartbeat stops (-1: none, or not known).
HEARTBEAT, BLOCKER = 0, 1


def encode(message: tuple[Any, ...]) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


async def send(stream: ByteSendStream, message: tuple[Any, ...]) -> None:
    await stream.send(encode(message))


async def receive(reader: BufferedByteReceiveStream) -> tuple[Any, ...]:
    """The next message; anyio's EndOfStream or BrokenResourceError when the peer is gone."""
    (size,) = HEADER.unpack(await reader.receive_exactly(HEADER.size))
    message: tuple[Any, ...] = pickle.loads(await reader.receive_exactly(size))
    return message
