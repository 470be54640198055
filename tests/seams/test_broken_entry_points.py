"""Broken plugins and scenario packs are reported beside the working ones, never instead of them.

The entry points are real: a ``*.dist-info`` directory on the path of a ``chaoseval``
subprocess, as pip would install it, declaring broken and working plugins and packs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chaoseval.errors import ConfigError
from chaoseval.seams.agent import registry as agents
from chaoseval.seams.perturbation import Perturbation
from chaoseval.seams.registry import Registry

BIN = Path(sys.executable).parent

# A plugin module whose own dependency is not installed.
MISSING_DEPENDENCY = "import no_such_dependency_of_chaoseval_tests\n"

PLUGINS = """
from typing import Any

from chaoseval.model.records import RootCause
from chaoseval.seams.perturbation import Perturbation


class Shelf(Perturbation[Any]):
    name = "shelf"
    models = "a working third-party plugin beside the broken ones"

    async def apply(self, call, call_next, ctx):
        return await call_next(call)


class CauseThief(Shelf):
    name = "cause_thief"
    root_causes = (RootCause(name="timeout", label="my timeout", owner="cause_thief"),)


def not_a_plugin():
    return None


def extra_pack():
    from chaoseval.bundled.scenarios import bundled

    base = next(s for s in bundled() if s.id == "vending-refund-not-dispensed")
    return [base.model_copy(update={"id": "extra-vending"})]


def twin_pack():
    from chaoseval.bundled.scenarios import bundled

    return [next(s for s in bundled() if s.id == "vending-refund-not-dispensed")]


def broken_pack():
    raise RuntimeError("the pack's data files are missing")
"""

ENTRY_POINTS = """
[chaoseval.perturbations]
shelf = brokenplugins:Shelf
cause_thief = brokenplugins:CauseThief
not_a_plugin = brokenplugins:not_a_plugin
needs_missing = brokenplugins_lazy:Anything
latency = brokenplugins:Shelf

[chaoseval.scenarios]
extra = brokenplugins:extra_pack
twin = brokenplugins:twin_pack
broken = brokenplugins:broken_pack
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    (root / "brokenplugins.py").write_text(textwrap.dedent(PLUGINS))
    (root / "brokenplugins_lazy.py").write_text(MISSING_DEPENDENCY)
    info = root / "brokenplugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return root


def chaoseval(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250", "NO_COLOR": "1", "PYTHONPATH": str(site)}
    return subprocess.run(
        [str(BIN / "chaoseval"), *args], capture_output=True, text=True, env=env, timeout=120
    )


def _flat(text: str) -> str:
    """Table cells wrap: compare text with the box drawing and line breaks taken out."""
    return " ".join("".join(c for c in text if c not in "│┃┏┓┗┛┡┩└┘─━┳┻╇┼├┤┬┴").split())


@pytest.mark.slow
def test_perturbations_list_shows_working_and_broken_plugins(site: Path) -> None:
    done = chaoseval(site, "perturbations", "list")
    assert done.returncode == 0, done.stderr
    out = _flat(done.stdout)
    working, _, broken = out.partition("Broken perturbation plugins (not loaded)")
    assert broken, done.stdout
    # every bundled plugin and the working third-party one are still there
    for name in ("latency", "malformed", "modal", "clock_skew", "shelf"):
        assert f" {name} " in working
    assert "needs_missing" in broken and "ModuleNotFoundError" in broken
    assert "not_a_plugin" in broken and "not a subclass of chaoseval's Perturbation" in broken
    assert "cause_thief" in broken and "already declared by core" in broken
    # a third-party entry point cannot take a bundled plugin's name
    assert "latency = brokenplugins:Shelf" in broken and "is taken by" in broken
    assert "pip uninstall brokenplugins" in broken


@pytest.mark.slow
def test_using_a_broken_plugin_names_the_entry_point_and_the_fix(
    site: Path, tmp_path: Path
) -> None:
    args = ["run", "--agent", "naive", "-n", "1", "-s", "vending-refund-not-dispensed"]
    args += ["--journal", str(tmp_path / "j.jsonl"), "--no-progress", "--no-report", "--k", "1"]
    done = chaoseval(site, *args, "-p", "needs_missing")
    assert done.returncode == 2
    message = " ".join(done.stderr.split())
    assert "perturbation 'needs_missing' is installed but entry point needs_missing = " in message
    assert "brokenplugins_lazy:Anything (group chaoseval.perturbations" in message
    assert "package brokenplugins" in message and "No module named" in message
    assert "pip uninstall brokenplugins" in message
    # the working plugin of the same package runs, next to the broken ones
    done = chaoseval(site, *args, "-p", "shelf", "--overwrite")
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_broken_scenario_packs_are_listed_and_the_rest_still_runs(
    site: Path, tmp_path: Path
) -> None:
    listed = chaoseval(site, "scenarios", "list")
    assert listed.returncode == 0, listed.stderr
    working, _, broken = _flat(listed.stdout).partition("Broken scenario packs (not loaded)")
    assert "vending-refund-not-dispensed" in working and "extra-vending" in working
    assert "broken = brokenplugins:broken_pack" in broken
    assert "RuntimeError: the pack's data files are missing" in broken
    assert "twin = brokenplugins:twin_pack" in broken and "already defined" in broken
    journal = tmp_path / "j.jsonl"
    run = chaoseval(
        site, "run", "--agent", "naive", "-n", "1", "-s", "extra-vending", "--journal",
        str(journal), "--no-progress", "--no-report", "--k", "1",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    warning = " ".join(run.stderr.split())
    assert "entry point broken = brokenplugins:broken_pack" in warning
    assert "its scenarios are left out" in warning
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert {r["scenario"] for r in records if r["type"] == "trial"} == {"extra-vending"}


class _Plugin(Perturbation[object]):  # type: ignore[type-var]
    async def apply(self, call: object, call_next: object, ctx: object) -> object:
        return call


def test_a_name_is_taken_once_and_a_reimport_replaces_itself() -> None:
    reg: Registry[type[Perturbation[object]]] = Registry("thing", "chaoseval.tests.none")
    reg.register("one")(_Plugin)
    reg.register("one")(_Plugin)  # the same definition again: fine

    class Other(_Plugin):
        pass

    with pytest.raises(ConfigError, match=r"'one' is taken by .*_Plugin; .*Other needs another"):
        reg.register("one")(Other)
    with pytest.raises(ConfigError, match="is not callable"):
        reg.add("two", 42)
    assert reg.names() == ["one"] and reg.broken() == []


class _Adapter:
    async def run(self, episode: object) -> object:
        return None


ADAPTER = _Adapter()  # an adapter object, not a factory: the agent registry takes both


def test_agents_register_as_factories_or_adapter_objects() -> None:
    # (pytest imports this file under another module name: compare the type, not identity)
    assert type(agents.get("tests.seams.test_broken_entry_points:ADAPTER")).__name__ == "_Adapter"
    with pytest.raises(ConfigError, match="neither a factory nor has 'async run"):
        agents.add("not-an-agent", "a string")
    assert "not-an-agent" not in agents.names()
