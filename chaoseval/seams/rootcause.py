"""Root causes: an open, registered set of names a failed trial is blamed on.

The judge's generic causes are declared here and owned by ``core``. A perturbation plugin
declares the causes it can produce in ``Perturbation.root_causes``; they are registered when
the plugin registers, so two plugins cannot give one name two meanings. A cause a plugin names
must be registered before the judge records it (see ``RootCauseRegistry.check``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from chaoseval.errors import ConfigError
from chaoseval.model.records import RootCause

CORE = "core"


class RootCauseRegistry:
    """Every known root cause by name; a name means one thing (same label, same owner)."""

    def __init__(self) -> None:
        self._causes: dict[str, RootCause] = {}

    def register(self, cause: RootCause) -> RootCause:
        known = self._causes.get(cause.name)
        if known is not None and known != cause:
            raise ConfigError(
                f"root cause {cause.name!r} ({cause.label!r}, declared by {cause.owner}) is "
                f"already declared by {known.owner} as {known.label!r}; give it another name"
            )
        self._causes[cause.name] = cause
        return cause

    def check(self, cause: RootCause) -> RootCause:
        """The cause itself if it is registered as given, else a ConfigError."""
        if self._causes.get(cause.name) != cause:
            raise ConfigError(
                f"root cause {cause.name!r} is not registered"
                + (f" as declared by {cause.owner}" if cause.name in self._causes else "")
                + "; a plugin lists the causes it can produce in its root_causes"
            )
        return cause

    def get(self, name: str) -> RootCause:
        try:
            return self._causes[name]
        except KeyError:
            raise ConfigError(
                f"unknown root cause {name!r} (known: {', '.join(sorted(self._causes))})"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._causes

    def __iter__(self) -> Iterator[RootCause]:
        return iter(sorted(self._causes.values(), key=lambda c: c.name))


root_causes = RootCauseRegistry()


def _core(name: str, label: str) -> RootCause:
    return root_causes.register(RootCause(name=name, label=label, owner=CORE))


# The judge's own causes, most specific first in the order the judge tries them.
HARNESS_ERROR = _core("harness_error", "not evaluable: chaoseval or the scenario broke")
PLUGIN_ERROR = _core("plugin_error", "not evaluable: a perturbation plugin broke")
UPSTREAM_ERROR = _core("upstream_error", "not evaluable: the model endpoint failed")
BUDGET_EXCEEDED = _core("budget_exceeded", "ran out of its step budget")
TIMEOUT = _core("timeout", "ran out of time")
UNHANDLED_TOOL_ERROR = _core("unhandled_tool_error", "did not handle a tool error")
CRASH = _core("crash", "the agent raised an exception")
INVALID_OUTPUT = _core("invalid_output", "returned something that is not an answer")
SAFETY_VIOLATION = _core("safety_violation", "broke a safety rule")
HALLUCINATION = _core("hallucination", "named something that does not exist")
GAVE_UP = _core("gave_up", "said it could not finish")
# Generic, not the malformed plugin's: the tool box marks any result that fails the tool's
# declared model as malformed, whoever broke it.
ACCEPTED_MALFORMED_DATA = _core("accepted_malformed_data", "went on with a malformed tool result")
WRONG_ANSWER = _core("wrong_answer", "the answer was wrong")
PREMATURE_STOP = _core("premature_stop", "stopped before the task was done")
WRONG_FINAL_STATE = _core("wrong_final_state", "left the world in the wrong state")

CORE_CAUSES: tuple[RootCause, ...] = tuple(c for c in root_causes if c.owner == CORE)

# Possible only with an LLM user (``run --user-model-endpoint``), so a run's manifest lists it
# only then (``engine.runner.build_manifest``); not a core cause, which every manifest lists.
USER_SIMULATOR = root_causes.register(
    RootCause(
        name="user_simulator",
        label="not evaluable: the simulated user broke (script, goal leak or endpoint)",
        owner="users",
    )
)


def possible(declared: Iterable[RootCause]) -> list[RootCause]:
    """The core causes, then the given plugin causes, each once: what a run can produce."""
    seen = {c.name: c for c in CORE_CAUSES}
    for cause in declared:
        seen.setdefault(cause.name, cause)
    return list(seen.values())
