"""A change of a microsecond to the model channel's request path, measured in one process.

Separate processes scatter by ~1.5 us a request and callgrind's count of this path by ~8k
instructions between runs of the same code (docs/BENCHMARKS.md, 2026-12-04): neither resolves
a 2 us change. Here one process serves bench_wire's bodies through the model server in process
(eight trials, count_forward's in-memory upstream session), and each round alternates the
tree's code with the patched one, so both meet the same spells of the machine's load.

    python benchmarks/alternate.py VARIANT.py [ROUNDS]

``VARIANT.py`` defines ``PATCHES``: a list of ``(owner, name, replacement)``, each set as
``setattr(owner, name, replacement)`` for the patched rounds. It prints, for forwarding one
message, forwarding an agent's turns 1-10 and the sim's kind, the median us a request of
each (the whole request in process, the sim's compute in the sim's), tree -> patched. A
variant that patches a function with itself read within 0.3 us in most runs here, within 0.9
in all (seven runs): a difference under 1 us wants runs repeated.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from bench_wire import J, _chat, _trial, _turn
from count_forward import _Session, serve
from trivial import scenario

from chaoseval.channels.model.session import UpstreamConfig, run_channels, trial_endpoint
from chaoseval.seams.agent import Episode

N = 800  # requests a kind a round
WARM = 200  # requests a kind served before the rounds
PATH = "/v1/chat/completions"
KEPT = 100  # steps left in the trajectory after each round (the trial's end walks them)


def _patches(variant: Path) -> list[tuple[Any, str, Any]]:
    spec = importlib.util.spec_from_file_location("variant", variant)
    if spec is None or spec.loader is None:
        raise SystemExit(f"alternate: cannot load {variant}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.PATCHES)


def main(variant: Path, rounds: int = 16) -> None:
    patches = _patches(variant)
    tree = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]

    def use(patched: bool) -> None:
        for owner, name, value in patches if patched else tree:
            setattr(owner, name, value)

    turns = [json.dumps(_turn(i)).encode() for i in range(N)]
    chats = [json.dumps(_chat(i)).encode() for i in range(N)]
    seen: dict[tuple[str, bool], list[float]] = {}

    async def body(episode: Episode, _: Any) -> None:
        async with AsyncExitStack() as stack:
            enter = stack.enter_async_context
            forwarding = await enter(run_channels(UpstreamConfig(endpoint="http://upstream/v1")))
            forwards = [await enter(trial_endpoint(episode)) for _ in range(J)]
            forwarding.upstream._session = _Session()  # type: ignore[union-attr]
            simulating = await enter(run_channels(UpstreamConfig()))
            sims = [await enter(trial_endpoint(episode)) for _ in range(J)]

            def keys(endpoints: list[Any]) -> list[list[tuple[bytes, bytes]]]:
                return [[(b"authorization", f"Bearer {e.api_key}".encode())] for e in endpoints]

            kinds = {
                "forwarding, one message": (forwarding.server, chats, keys(forwards)),
                "forwarding, turns 1-10": (forwarding.server, turns, keys(forwards)),
                "the sim's kind": (simulating.server, chats, keys(sims)),
            }
            for app, bodies, auths in kinds.values():
                await serve(app, PATH, bodies[:WARM], auths)
            steps = episode.link.state.trajectory.steps  # type: ignore[union-attr]
            for r in range(rounds):
                for patched in (False, True) if r % 2 else (True, False):
                    use(patched)
                    for name, (app, bodies, auths) in kinds.items():
                        started = time.perf_counter()
                        await serve(app, PATH, bodies, auths)
                        seen.setdefault((name, patched), []).append(
                            (time.perf_counter() - started) / N * 1e6
                        )
                        del steps[KEPT:]
            use(False)

    _trial(scenario(), body, {})
    print(f"us a request in process, median of {rounds} rounds each (tree -> {variant.name}):")
    for name in ("forwarding, one message", "forwarding, turns 1-10", "the sim's kind"):
        a, b = statistics.median(seen[name, False]), statistics.median(seen[name, True])
        print(f"  {name:<26} {a:6.1f} -> {b:6.1f}  ({b - a:+.2f})")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]), *(int(a) for a in sys.argv[2:]))
