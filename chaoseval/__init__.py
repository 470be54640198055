"""chaoseval: robustness and chaos testing for tool-using AI agents.

Write agents, scenarios and perturbation plugins against the names exported here
(``from chaoseval import AgentOutput, Episode, ToolTimeout``); the modules behind them may move.

Names resolve on first use (PEP 562): ``import chaoseval`` imports none of the package's
modules, so the command line and plugin discovery do not pay for what they do not touch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ imports on demand
    from chaoseval.engine.runner import RunConfig, RunResult, run
    from chaoseval.errors import (
        AgentVisibleError,
        ChaosevalError,
        ConfigError,
        HarnessError,
        JournalError,
        PluginError,
        ScenarioError,
        ToolConnectionError,
        ToolError,
        ToolHTTPError,
        ToolTimeout,
    )
    from chaoseval.model.clock import Clock, VirtualClock
    from chaoseval.model.drift import DriftPoint
    from chaoseval.model.injection import Goal, Payload
    from chaoseval.model.records import (
        CLEAN,
        AgentOutput,
        Cell,
        ContractResult,
        ModelSettings,
        PerturbationSpec,
        RootCause,
        RunManifest,
        TrialRecord,
        Usage,
    )
    from chaoseval.model.scenario import (
        Budgets,
        Check,
        CheckResult,
        DegradationContract,
        FactSpec,
        MemoryItem,
        Policy,
        Scenario,
        ToolDescription,
        ToolSpec,
        VetoRule,
        tool,
    )
    from chaoseval.model.trajectory import Fault, Step, Trajectory
    from chaoseval.model.world import World
    from chaoseval.seams.agent import AgentAdapter, Episode, ToolChannel, agent, load_agent
    from chaoseval.seams.perturbation import (
        CallNext,
        CommonParams,
        FailureContext,
        ObservationCall,
        Perturbation,
        PerturbationContext,
        ToolCall,
        perturbation,
    )
    from chaoseval.store.journal import Journal, read_journal

    __version__: str

# Where each public name lives. tests/test_exported_members.py checks that this map, __all__
# and the imports above agree, so adding a name means adding it in all three.
_LOCATIONS: dict[str, str] = {
    **dict.fromkeys(
        (
            "AgentVisibleError",
            "ChaosevalError",
            "ConfigError",
            "HarnessError",
            "JournalError",
            "PluginError",
            "ScenarioError",
            "ToolConnectionError",
            "ToolError",
            "ToolHTTPError",
            "ToolTimeout",
        ),
        "chaoseval.errors",
    ),
    **dict.fromkeys(("Clock", "VirtualClock"), "chaoseval.model.clock"),
    **dict.fromkeys(
        (
            "AgentOutput",
            "CLEAN",
            "Cell",
            "ContractResult",
            "ModelSettings",
            "PerturbationSpec",
            "RootCause",
            "RunManifest",
            "TrialRecord",
            "Usage",
        ),
        "chaoseval.model.records",
    ),
    **dict.fromkeys(
        (
            "Budgets",
            "Check",
            "CheckResult",
            "DegradationContract",
            "FactSpec",
            "MemoryItem",
            "Policy",
            "Scenario",
            "ToolDescription",
            "ToolSpec",
            "VetoRule",
            "tool",
        ),
        "chaoseval.model.scenario",
    ),
    "DriftPoint": "chaoseval.model.drift",
    **dict.fromkeys(("Goal", "Payload"), "chaoseval.model.injection"),
    **dict.fromkeys(("Fault", "Step", "Trajectory"), "chaoseval.model.trajectory"),
    "World": "chaoseval.model.world",
    **dict.fromkeys(
        ("AgentAdapter", "Episode", "ToolChannel", "agent", "load_agent"), "chaoseval.seams.agent"
    ),
    **dict.fromkeys(
        (
            "CallNext",
            "CommonParams",
            "FailureContext",
            "ObservationCall",
            "Perturbation",
            "PerturbationContext",
            "ToolCall",
            "perturbation",
        ),
        "chaoseval.seams.perturbation",
    ),
    **dict.fromkeys(("RunConfig", "RunResult", "run"), "chaoseval.engine.runner"),
    **dict.fromkeys(("Journal", "read_journal"), "chaoseval.store.journal"),
}

__all__ = [
    "CLEAN",
    "AgentAdapter",
    "AgentOutput",
    "AgentVisibleError",
    "Budgets",
    "CallNext",
    "Cell",
    "ChaosevalError",
    "Check",
    "CheckResult",
    "Clock",
    "CommonParams",
    "ConfigError",
    "ContractResult",
    "DegradationContract",
    "DriftPoint",
    "Episode",
    "FactSpec",
    "FailureContext",
    "Fault",
    "Goal",
    "HarnessError",
    "Journal",
    "JournalError",
    "MemoryItem",
    "ModelSettings",
    "ObservationCall",
    "Payload",
    "Perturbation",
    "PerturbationContext",
    "PerturbationSpec",
    "PluginError",
    "Policy",
    "RootCause",
    "RunConfig",
    "RunManifest",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "Step",
    "ToolCall",
    "ToolChannel",
    "ToolConnectionError",
    "ToolDescription",
    "ToolError",
    "ToolHTTPError",
    "ToolSpec",
    "ToolTimeout",
    "Trajectory",
    "TrialRecord",
    "Usage",
    "VetoRule",
    "VirtualClock",
    "World",
    "__version__",
    "agent",
    "load_agent",
    "perturbation",
    "read_journal",
    "run",
    "tool",
]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chaoseval")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _LOCATIONS:
        value = getattr(import_module(_LOCATIONS[name]), name)
    else:
        raise AttributeError(f"module 'chaoseval' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
