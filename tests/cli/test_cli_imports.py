"""The command line's imports: no circle among its modules, and ``--help`` stays cheap."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import chaoseval.cli

CLI = Path(chaoseval.cli.__file__).parent


def imports_of(path: Path) -> set[str]:
    """Modules a file imports, TYPE_CHECKING blocks and function bodies included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def test_command_modules_import_only_common_and_app_imports_them() -> None:
    modules = {p.stem: imports_of(p) for p in CLI.glob("*.py") if p.stem != "__init__"}
    # Private modules (_common, _reading, _gating) are pieces the commands share, no command.
    shared = {n for n in modules if n.startswith("_")}
    commands = set(modules) - {"app"} - shared
    assert commands, "no command modules found"
    # Only catalogue imports another command module (authoring's lint, as `scenarios lint`).
    allowed = {"catalogue": {"chaoseval.cli.authoring", "chaoseval.cli.authoring.lint_cmd"}}
    for name in sorted(commands | shared):
        cli_imports = {m for m in modules[name] if m.startswith("chaoseval.cli.")}
        pieces = {m for m in cli_imports if m.split(".")[2] in shared}
        assert cli_imports - pieces <= allowed.get(name, set()), name
    assert {f"chaoseval.cli.{c}" for c in commands} <= modules["app"]
    assert not any(m.startswith("chaoseval.cli") for m in modules["_common"])


def _imported_after(statement: str, prefixes: tuple[str, ...]) -> str:
    """The modules starting with ``prefixes`` that a fresh interpreter holds after one import."""
    code = (
        f"import sys\n{statement}\n"
        f"print(sorted(m for m in sys.modules if m.startswith({prefixes!r})))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_help_does_not_import_the_engine_or_the_statistics() -> None:
    heavy = ("scipy", "hypothesis", "numpy", "faker", "chaoseval.engine", "chaoseval.analysis")
    assert (
        _imported_after("from chaoseval.cli.app import app", (*heavy, "chaoseval.loading.files"))
        == "[]"
    )


def test_the_pytest_plugin_imports_nothing_of_chaoseval_until_its_fixture_runs() -> None:
    # pytest loads every installed pytest11 plugin in every session, chaoseval's or not.
    out = _imported_after("import chaoseval.testing", ("chaoseval",))
    assert out == "['chaoseval', 'chaoseval.testing']"


def test_a_run_imports_only_the_agent_and_plugins_it_names() -> None:
    # Each named entry point alone: the OpenAI SDK (~0.8 s of CPU), hypothesis (the malformed
    # plugin) and the browser agents stay out of a run of `resilient` under `latency`.
    statement = (
        "from chaoseval.seams.agent import load_agent\n"
        "from chaoseval.seams.perturbation import registry\n"
        "load_agent('resilient'); registry.get('latency')"
    )
    unused = ("openai", "hypothesis", "playwright", "chaoseval.agents.browser")
    assert _imported_after(statement, unused) == "[]"
    assert "chaoseval.agents.simulated" in _imported_after(statement, ("chaoseval.agents.sim",))


def test_the_statistics_and_a_frozen_clock_leave_scipy_stats_out() -> None:
    # The normal quantile comes from scipy.special (scipy.stats costs ~0.7 s to import), and a
    # frozen block does not scan scipy, whose lazy attributes would import all of it (~2 s).
    statement = (
        "import chaoseval.render.report\nfrom datetime import datetime\n"
        "from chaoseval.model.clock import frozen_at\n"
        "with frozen_at(datetime(2026, 1, 1)):\n    pass"
    )
    assert _imported_after(statement, ("scipy.stats", "scipy.signal")) == "[]"
