"""One exception root, split by whose fault it is.

``AgentVisibleError`` is part of the episode: the agent sees it and is judged on how it copes.
``HarnessError`` means chaoseval, a plugin or a scenario broke: the trial is *not evaluable*
and is never counted as the agent's failure.
"""

from __future__ import annotations

import errno
import os
from typing import Literal

Layer = Literal["tool", "transport"]


class ChaosevalError(Exception):
    """Root of every exception chaoseval raises on purpose."""


# --- shown to the agent -------------------------------------------------------------------


class AgentVisibleError(ChaosevalError):
    """An error the agent receives from a tool. Recorded in the trajectory, judged as behaviour."""

    kind = "error"
    # Where a wire channel delivers it: in the tool's answer ("tool": an MCP ``isError``
    # result) or as a failure of the exchange carrying it ("transport": a real HTTP status,
    # reset or hang). In process both reach the agent as this exception.
    layer: Layer = "tool"


class ToolError(AgentVisibleError):
    """The world said no: unknown id, permission denied, failed precondition, bad arguments."""

    kind = "tool_error"


class ToolTimeout(AgentVisibleError, TimeoutError):
    """The tool did not answer before its deadline."""

    kind = "timeout"
    hang = False  # on the transport layer: no answer at all (else a gateway's 504 at once)


class ToolHTTPError(AgentVisibleError):
    """An HTTP-style failure: 429 or 5xx, with an optional Retry-After in seconds."""

    kind = "http_error"

    def __init__(self, status: int, message: str = "", retry_after: float | None = None):
        self.status = status
        self.retry_after = retry_after
        super().__init__(message or f"HTTP {status}")

    @property
    def retryable(self) -> bool:
        return self.status == 429 or self.status >= 500


class ToolConnectionError(AgentVisibleError, ConnectionError):
    """The connection to the tool was reset before an answer arrived."""

    kind = "connection_reset"


# --- the harness's own faults ---------------------------------------------------------------


class HarnessError(ChaosevalError):
    """chaoseval, a plugin or a scenario broke. The trial is not evaluable."""


class PluginError(HarnessError):
    """A perturbation plugin raised something other than a fault meant for the agent."""

    def __init__(self, plugin: str, error: BaseException):
        self.plugin = plugin
        self.error = error
        super().__init__(f"perturbation plugin {plugin!r} raised {type(error).__name__}: {error}")


class UpstreamError(HarnessError):
    """The model endpoint (``--model-endpoint``) could not be reached or gave no usable
    answer: the infrastructure failed, not the agent."""


class UserSimulatorError(HarnessError):
    """The LLM user (``--user-model-endpoint``) failed the trial's conversation: it broke its
    script (stated a value it does not know), leaked its goal verbatim, or its endpoint failed
    after retries. The simulator's failure, never the agent's: not evaluable, root cause
    ``user_simulator``, counted apart in the reports."""


class ScenarioError(HarnessError):
    """A scenario is invalid or its own code (tool, verifier) raised."""

    def __init__(self, message: str, *, source: str | None = None, where: str | None = None):
        self.source = source
        self.where = where
        prefix = ""
        if source:
            prefix = f"{source}: "
        if where:
            prefix += f"{where}: "
        super().__init__(prefix + message)


class ScenarioLoadErrors(ScenarioError):
    """Every broken scenario file of a load, reported together."""

    def __init__(self, errors: list[ScenarioError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class JournalError(HarnessError):
    """A journal file is unreadable, corrupt or belongs to another run."""


class HarnessStop(HarnessError):
    """The harness cannot go on (a disk it writes to is full): the run stops at once, the
    trials it could not record are not recorded at all (no outcome is booked to the agent for
    them) and ``--resume`` runs them again. ``chaoseval run`` exits 4 on it."""


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says a disk (or the user's quota on it) is full."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def stop_for(exc: OSError, where: object) -> HarnessStop:
    """The HarnessStop of a write to ``where`` that failed with a full disk."""
    code = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return HarnessStop(f"{where}: {os.strerror(exc.errno or 0)} ({code}) while chaoseval wrote it")


def stop_in(exc: BaseException) -> HarnessStop | None:
    """The HarnessStop behind ``exc`` (itself, a member of an exception group, its cause), a
    full disk's OSError made one, or None: a trial that ran into it is no outcome of the
    agent's, wherever in the trial's code it surfaced."""
    todo: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, HarnessStop):
            return e
        if isinstance(e, OSError) and disk_full(e):
            return stop_for(e, e.filename or "a file of the trial")
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        todo.extend([e.__cause__, e.__context__])
    return None


class ConfigError(ChaosevalError):
    """The user asked for something that does not exist or does not fit together."""


# --- said, not raised ------------------------------------------------------------------------


class HarnessWarning(UserWarning):
    """Something of chaoseval's own went wrong after a trial's outcome was known (its
    directory could not be removed): said, never charged to the trial."""


class IsolationWarning(UserWarning):
    """A run whose exec: agents are not isolated from each other (chaoseval.agents.sandbox):
    issued once, when the run starts; the manifest and the report say it too."""


# --- errors crossing a process boundary ------------------------------------------------------

# What the user must fix (settings, a scenario, a plugin): one message, never a traceback,
# whichever executor the error happened in.
USER_FACING = (ConfigError, ScenarioError, PluginError)


def user_facing(exc: BaseException) -> ChaosevalError | None:
    """The ConfigError, ScenarioError or PluginError behind ``exc`` (itself, its cause, an
    exception group's member, a Ray task error's ``cause``), or None."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            # A Ray task error: also an instance of its cause's class, but its text is the
            # worker's traceback; the cause carries the message.
            todo.insert(0, cause)
            continue
        if isinstance(e, USER_FACING):
            return e
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        todo.extend([e.__cause__, e.__context__])
    return None


def relay(exc: ChaosevalError) -> tuple[str, str]:
    """``exc`` as (kind, message): plain data that crosses a pipe or a Ray call."""
    kind = "config" if isinstance(exc, ConfigError) else "scenario"
    return (kind if isinstance(exc, ConfigError | ScenarioError) else "harness"), str(exc)


def relayed(kind: str, message: str) -> ChaosevalError:
    """The error :func:`relay` sent, rebuilt on the other side with the same message."""
    if kind == "config":
        return ConfigError(message)
    return ScenarioError(message) if kind == "scenario" else HarnessError(message)
