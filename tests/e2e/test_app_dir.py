"""``--agent module:factory`` from the working directory, as a user runs it from their repo.

The directory looks like a user's project: its own ``scenarios`` and ``perturbations``
packages, an agent module beside a helper it imports, and files named like chaoseval's own
dependencies (``yaml.py``, ``faker.py``). Each of them raises when imported, so a run that
picked up the wrong one fails loudly instead of passing by luck.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.shell import sh, user_env
from tests.loading.test_userpath import write_scenario

pytestmark = pytest.mark.slow
SCRIPT = str(Path(sys.executable).parent / "chaoseval")
AGENT = """\
from chaoseval import AgentOutput, Episode
from helpers import ANSWER  # a module beside this one


class Echo:
    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        return AgentOutput(answer=ANSWER)


def factory() -> Echo:
    return Echo()
"""
TRAP = "raise RuntimeError('chaoseval imported the user\\'s {name} instead of its own')\n"


def project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "myagent.py").write_text(AGENT)
    (root / "helpers.py").write_text("ANSWER = 'answered from helpers.py'\n")
    for name in ("scenarios", "perturbations"):
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(TRAP.format(name=f"{name} package"))
    return root


def chaoseval(
    *args: str, cwd: Path, module: bool = False, pythonpath: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = user_env() if pythonpath is None else user_env(PYTHONPATH=pythonpath)
    command = [sys.executable, "-m", "chaoseval"] if module else [SCRIPT]
    return sh([*command, *args], cwd, env)


def run_echo(cwd: Path, *extra: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return chaoseval(
        "run", "--agent", "myagent:factory", "-s", "vending-*", "-n", "1", "-p", "latency",
        "--journal", "j.jsonl", "--no-report", *extra, cwd=cwd, **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip


def answers(journal: Path) -> set[str]:
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    return {r["answer"] for r in lines if r.get("type") == "trial"}


def test_own_scenarios_and_perturbations_packages_on_the_path(tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    listed = chaoseval("scenarios", "list", cwd=root, pythonpath=".")
    assert listed.returncode == 0, listed.stderr
    assert "vending-refund-log-down" in listed.stdout and "library-" in listed.stdout
    plugins = chaoseval("perturbations", "list", cwd=root, pythonpath=".")
    assert plugins.returncode == 0, plugins.stderr
    assert "stale_memory" in plugins.stdout
    out = run_echo(root, pythonpath=".")
    assert out.returncode == 0, out.stderr
    assert answers(root / "j.jsonl") == {"answered from helpers.py"}


@pytest.mark.parametrize("module", [False, True], ids=["script", "python-m"])
def test_agent_module_found_in_the_working_directory_without_pythonpath(
    tmp_path: Path, module: bool
) -> None:
    root = project(tmp_path / "proj")
    for name in ("yaml", "faker", "typer", "hypothesis", "httpx", "tenacity", "respx"):
        (root / f"{name}.py").write_text(TRAP.format(name=f"{name}.py"))
    out = run_echo(root, module=module)
    assert out.returncode == 0, out.stderr
    assert "wrote 6 trial(s)" in out.stdout
    assert answers(root / "j.jsonl") == {"answered from helpers.py"}


def test_app_dir_names_another_directory(tmp_path: Path) -> None:
    project(tmp_path / "proj")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    missing = run_echo(elsewhere)
    assert missing.returncode == 2
    assert "cannot import module 'myagent'" in missing.stderr
    out = run_echo(elsewhere, "--app-dir", "../proj")
    assert out.returncode == 0, out.stderr
    assert answers(elsewhere / "j.jsonl") == {"answered from helpers.py"}


def test_a_module_named_like_an_installed_one_is_reported_not_imported(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "rich.py").write_text(AGENT.replace("from helpers import ANSWER", "ANSWER = 'x'"))
    out = chaoseval("run", "--agent", "rich:factory", "--journal", "j.jsonl", cwd=root)
    assert out.returncode == 2
    assert "rich.py is not the module 'rich'" in out.stderr and "rename rich.py" in out.stderr
    assert not (root / "j.jsonl").exists()


def test_python_scenario_file_imports_a_module_beside_it(tmp_path: Path) -> None:
    path = write_scenario(tmp_path / "proj" / "shop")
    out = chaoseval(
        "run", "--agent", "scripted", "--scenarios", str(path), "-n", "1",
        "--journal", "j.jsonl", "--no-report", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert [r["status"] for r in lines if r.get("type") == "trial"] == ["passed"]
