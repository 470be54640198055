"""The public face: ``import chaoseval`` exposes a pinned set of names, lazily.

Pinning the list (as httpx does) makes adding or dropping a public name a visible decision.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import chaoseval

PUBLIC = {
    # writing an agent
    "AgentAdapter", "AgentOutput", "Episode", "ModelSettings", "Usage", "agent", "load_agent",
    "ToolChannel", "ToolDescription",
    # writing a scenario
    "Budgets", "Check", "CheckResult", "FactSpec", "MemoryItem", "Policy", "Scenario",
    "ToolSpec", "World", "tool", "Clock", "VirtualClock", "DegradationContract",
    "DriftPoint", "VetoRule",
    "Payload", "Goal",
    # writing a perturbation plugin
    "CallNext", "CommonParams", "ObservationCall", "Perturbation", "PerturbationContext",
    "ToolCall", "perturbation", "FailureContext", "RootCause",
    # running and reading results
    "CLEAN", "Cell", "PerturbationSpec", "RunConfig", "RunResult", "run", "Journal", "read_journal",
    "RunManifest", "TrialRecord", "Trajectory", "Step", "Fault", "ContractResult",
    # errors: one root, the ones an agent sees, the harness's own
    "ChaosevalError", "AgentVisibleError", "ToolError", "ToolTimeout", "ToolHTTPError",
    "ToolConnectionError", "HarnessError", "PluginError", "ScenarioError", "JournalError",
    "ConfigError",
    "__version__",
}  # fmt: skip


def test_exported_names_are_pinned() -> None:
    assert set(chaoseval.__all__) == PUBLIC
    assert len(chaoseval.__all__) == len(PUBLIC)  # no name listed twice


def test_every_exported_name_resolves_to_its_defining_object() -> None:
    for name in chaoseval.__all__:
        value = getattr(chaoseval, name)
        assert value is not None, name
        if name != "__version__":
            module = sys.modules[chaoseval._LOCATIONS[name]]
            assert getattr(module, name) is value, name
    assert isinstance(chaoseval.__version__, str) and chaoseval.__version__


def test_dir_lists_the_public_names() -> None:
    assert set(dir(chaoseval)) >= PUBLIC


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        chaoseval.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("chaoseval.NoSuchThing resolved")


def test_static_imports_match_the_lazy_map() -> None:
    """The TYPE_CHECKING imports (what type checkers see) name the same modules as the map."""
    tree = ast.parse(Path(chaoseval.__file__).read_text(encoding="utf-8"))
    guarded = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    static = {
        alias.name: node.module
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert static == chaoseval._LOCATIONS
    assert set(static) | {"__version__"} == set(chaoseval.__all__)


def test_import_is_lazy() -> None:
    """``import chaoseval`` loads none of its modules: the CLI and plugins pay only for use."""
    code = (
        "import sys, chaoseval\n"
        "print(sorted(m for m in sys.modules if m.startswith('chaoseval.')))\n"
        "chaoseval.Scenario\n"
        "print('chaoseval.model.scenario' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "True"]
