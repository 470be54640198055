"""Reading a conversation's requests, in process: the model channel's reader, which goes on from
the request each one repeats (resent.ConversationReader), against the whole read every
request had before (resent.read_whole: the escape scan, wire.read_top and the fingerprint
over the whole body).

Eight conversations taking turns, as bench_wire's client threads send them (bench_wire._turn:
a system prompt, eight tools, a round of question, tool call and tool result a turn), over
their first 10, 30 and 60 turns. Each figure is the best of three passes over every request,
both ways side by side; the reader starts empty each pass, so each conversation's first
request is read whole and kept. Figures only: nothing asserts a timing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from chaoseval.channels.model.resent import ConversationReader, read_whole

PASSES = 3


def _per_request(bodies: list[bytes], read: Callable[[], Callable[[bytes], object]]) -> float:
    """Microseconds a request, the best of PASSES passes (``read()``: a fresh reader each)."""
    best = float("inf")
    for _ in range(PASSES):
        each = read()
        started = time.perf_counter()
        for raw in bodies:
            each(raw)
        best = min(best, time.perf_counter() - started)
    return best / len(bodies) * 1e6


def conversation_reads(turns: tuple[int, ...] = (10, 30, 60)) -> None:
    from bench_wire import J, _turn  # (bench_wire prints this under its table)

    print("  reading a conversation's requests, in process (8 conversations taking turns):")
    for n in turns:
        bodies = [json.dumps(_turn(i, n)).encode() for i in range(J * n)]
        size = sum(map(len, bodies)) / len(bodies) / 1e3
        reader = _per_request(bodies, lambda: ConversationReader().read)
        whole = _per_request(bodies, lambda: read_whole)
        print(
            f"    turns 1-{n:<3} {size:5.1f} kB a request on average: the reader"
            f" {reader:6.1f} us, the whole read {whole:6.1f} us ({whole / reader:.1f}x)"
        )


if __name__ == "__main__":
    conversation_reads()
