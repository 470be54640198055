"""The ``mcp`` library's log records, kept with the trial whose MCP server logged them.

The SDK logs through the standard ``logging`` loggers ``mcp.*``; with no logging set up, a
warning goes to chaoseval's own stderr (Python's last-resort handler), once per occurrence:
a run whose agents leave requests unanswered at the end of their trials printed "shutdown
error response ... gave up: transport write blocked" dozens of times, about no one trial.

A record logged while one of a trial's MCP requests (or its session, started by one) is
being served goes instead into that trial's ``mcp.log`` artifact, written when its MCP
server stops (kept in memory, bounded, when the run keeps no artifacts). Anything the library
logs outside a trial's server goes where it would have gone.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar

from chaoseval.store import artifacts

LOGGER = "mcp"
ARTIFACT = "mcp.log"
MAX_RECORDS = 1000  # per trial; the rest are counted

_trial: ContextVar[TrialLog | None] = ContextVar("chaoseval_mcp_log", default=None)


class TrialLog:
    """One trial's MCP log records."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.dropped = 0

    def bound(self) -> _Bound:
        """Records logged in the block (and by the tasks it starts: a session started by a
        request) are this trial's."""
        return _Bound(self)

    def keep(self) -> None:
        """Into the trial's artifacts (when the run keeps them)."""
        store = artifacts.current()
        if store is None or not (self.lines or self.dropped):
            return
        tail = [f"[... {self.dropped} more record(s) not kept]"] if self.dropped else []
        store.write(ARTIFACT, "\n".join([*self.lines, *tail]) + "\n")


class _Bound:
    """TrialLog.bound's block (a class: every MCP request enters one, and a generator's
    context manager costs several times as much)."""

    __slots__ = ("_log", "_token")

    def __init__(self, log: TrialLog):
        self._log = log

    def __enter__(self) -> None:
        self._token = _trial.set(self._log)

    def __exit__(self, *exc: object) -> None:
        _trial.reset(self._token)


class _Handler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        log = _trial.get()
        if log is None:
            _elsewhere(record)
        elif len(log.lines) < MAX_RECORDS:
            log.lines.append(self.format(record))
        else:
            log.dropped += 1


def _elsewhere(record: logging.LogRecord) -> None:
    """Where the record would have gone without this handler: the root logger's handlers,
    else Python's last resort (stderr, warnings and worse)."""
    root = logging.getLogger()
    if root.handlers:
        root.handle(record)
    elif logging.lastResort is not None and record.levelno >= logging.lastResort.level:
        logging.lastResort.handle(record)


def install() -> None:
    """Route the ``mcp`` loggers through the trials (once per process; idempotent)."""
    logger = logging.getLogger(LOGGER)
    if any(isinstance(h, _Handler) for h in logger.handlers):
        return
    handler = _Handler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False
