"""Where trials run: the executor seam, its registry and the default choice.

An :class:`Executor` takes the run's remaining trial plans and what every trial shares
(:class:`TrialJob`), runs them, and hands each finished trial to the runner's :class:`Sink`
as a :class:`Finished`: the journal line already encoded (and redacted) where the trial ran,
plus what the runner counts (status, cost, tokens). The runner is the journal's only writer.

- ``inprocess``: trials as tasks on the runner's own event loop (fast; ``chaoseval run``'s
  default for virtual-clock agents, whose trials never wait on wall time, and ``run()``'s).
- ``process``: trials in forked worker processes, several per worker on its own event loop,
  supervised by the runner: a trial past its timeout is killed with its worker, an exit, a
  segfault or ``--max-memory`` becomes a recorded crash, and no other trial is lost.
  ``chaoseval run``'s default for real-clock agents, whose code runs in the harness's process.
- ``ray``: trials on a Ray cluster (``chaoseval[ray]``), local or ``--ray-address``, with the
  process executor's supervision; for more than one machine (docs/RAY.md).
"""

from __future__ import annotations

from collections.abc import Callable

from chaoseval.config import parse_size
from chaoseval.engine.executors.base import Executor, Finished, Sink, TrialJob
from chaoseval.errors import ConfigError
from chaoseval.seams.agent import AgentAdapter

__all__ = [
    "EXECUTORS",
    "Executor",
    "Finished",
    "Sink",
    "TrialJob",
    "default_executor",
    "make_executor",
    "parse_size",
]


def _inprocess() -> Executor:
    from chaoseval.engine.executors.inprocess import InProcessExecutor

    return InProcessExecutor()


def _process() -> Executor:
    from chaoseval.engine.executors.process import ProcessExecutor

    return ProcessExecutor()


def _ray() -> Executor:
    from chaoseval.engine.executors.ray import RayExecutor

    return RayExecutor()


# Factories by name; imported on use, so choosing one never loads the others (nor Ray).
EXECUTORS: dict[str, Callable[[], Executor]] = {
    "inprocess": _inprocess,
    "process": _process,
    "ray": _ray,
}


def default_executor(agent: AgentAdapter) -> str:
    """What ``chaoseval run`` uses: virtual-clock agents never wait on wall time and run
    fastest in process; a real-clock agent's code could block the event loop, spin or exit,
    so it runs in worker processes."""
    return "inprocess" if getattr(agent, "clock", "real") == "virtual" else "process"


def make_executor(name: str | Executor | None) -> Executor:
    """The executor ``name``; None is ``inprocess``: a program calling ``run()`` may watch
    its agent object, so it opts into worker processes (``chaoseval run`` picks by
    :func:`default_executor`). An executor object is used as it is (one with options, such
    as ``RayExecutor(address=...)``)."""
    if name is not None and not isinstance(name, str):
        return name
    chosen = name or "inprocess"
    factory = EXECUTORS.get(chosen)
    if factory is None:
        raise ConfigError(f"--executor {chosen!r} is not one of {', '.join(sorted(EXECUTORS))}")
    return factory()
