"""What a user installs: the wheel carries every package, and runs from a fresh venv.

Users install from a package index, not from a clone; the editable install that the rest of
the suite uses would hide a package missing from the wheel's explicit list.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.shell import sh, user_env

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def package_dirs() -> dict[str, Path]:
    """Every directory holding Python modules, by the package name it installs as."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    roots = {"chaoseval": ROOT / "chaoseval"}
    roots |= {name: ROOT / path for name, path in setuptools.get("package-dir", {}).items()}
    found: dict[str, Path] = {}
    for name, root in roots.items():
        if not any(root.glob("*.py")):
            found[name] = root  # a data-only package (chaoseval.docs: the guides)
        for init in root.rglob("*.py"):
            rel = init.parent.relative_to(root)
            if "__pycache__" not in rel.parts:
                found[".".join((name, *rel.parts))] = init.parent
    return found


def test_the_explicit_packages_list_names_every_package_directory() -> None:
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = package_dirs()
    missing = sorted(set(found) - listed)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
    assert sorted(listed - set(found)) == []  # a listed package that no longer exists
    for name, directory in found.items():
        if any(directory.glob("*.py")):
            assert (directory / "__init__.py").exists(), f"{name}: no __init__.py"


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = sh(list(args), cwd, env or user_env())
    assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding chaoseval from a wheel and, by a .pth file, the dev venv's
    dependencies (not its editable chaoseval: a path added by .pth is not a site directory,
    so the editable finder's own .pth file in it is never run)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Build from a copy: setuptools writes build/ and *.egg-info beside the sources.
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("chaoseval", "scenarios", "perturbations", "docs"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp / "wheels"
    pip = (sys.executable, "-m", "pip")
    run(*pip, "wheel", ".", "-q", "--no-deps", "--no-build-isolation", "-w", wheels, cwd=src)
    (wheel,) = wheels.glob("chaoseval-*.whl")
    env = tmp / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", env, cwd=tmp)
    python = env / "bin" / "python"
    run(*pip, "--python", python, "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp)
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp)
    (Path(site.strip()) / "dev-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return env


@pytest.mark.slow
def test_the_wheel_runs_the_bundled_library_from_an_unrelated_directory(
    venv: Path, tmp_path: Path
) -> None:
    env = user_env()
    code = "import chaoseval as c, chaoseval.bundled.scenarios as b; print(c.__file__, b.__file__)"
    for where in run(venv / "bin" / "python", "-c", code, cwd=tmp_path, env=env).split():
        assert Path(where).is_relative_to(venv), f"imported {where}, not the wheel's copy"
    # The authoring guide and the bundled scenario sources it points to are installed (issue 21).
    code = (
        "import importlib.resources as r; d = r.files('chaoseval');"
        "print(d / 'docs' / 'AUTHORING.md'); print(d / 'bundled' / 'scenarios' / 'library.yaml');"
        "print(d / 'bundled' / 'scenarios' / 'vending.py')"
    )
    for where in run(venv / "bin" / "python", "-c", code, cwd=tmp_path, env=env).split():
        assert Path(where).is_file() and Path(where).is_relative_to(venv), where
    chaoseval = venv / "bin" / "chaoseval"
    listed = run(chaoseval, "scenarios", "list", cwd=tmp_path, env=env)
    assert "vending-refund-log-down" in listed
    assert "library-" in listed  # a YAML scenario: the wheel carries the package data
    plugins = run(chaoseval, "perturbations", "list", cwd=tmp_path, env=env)
    # A module missing from the wheel shows as a broken entry point, listed but not loaded.
    assert "Broken" not in listed + plugins
    for name in PYPROJECT["project"]["entry-points"]["chaoseval.perturbations"]:
        assert name in plugins
    out = run(
        chaoseval, "run", "--agent", "naive", "-s", "vending-*", "-p", "latency", "-n", "2",
        "--journal", "j.jsonl", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert "wrote 12 trial(s) to j.jsonl" in out and "pass^2" in out


# A fenced block (indented ones in lists too), and the HTML comment on the line before it.
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>\w*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S
)
FILE_BLOCK = re.compile(r"# (?P<name>[\w.-]+\.(?:py|toml))\b")  # first line: "# myagent.py ..."
EXIT = re.compile(r"<!-- test: exit (?P<code>\d+) -->")


@dataclass
class Step:
    """One README block as a user meets it: a shell block to run (``code``: the exit status
    the README says it has), or a file it tells the user to save."""

    line: int
    shell: str | None = None
    code: int = 0
    file: str | None = None
    text: str = ""


def readme_steps(text: str) -> list[Step]:
    """The README's blocks in order: bash blocks, and blocks whose first line names the file
    to save them as; a block after ``<!-- no-test ... -->`` (system installs, a clone's
    examples, a real API key) is left out."""
    steps = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip().rsplit("\n", 1)[-1].strip()
        if before.startswith("<!-- no-test"):
            continue
        line = text.count("\n", 0, m.start()) + 1
        body = textwrap.dedent(m["body"])
        name = FILE_BLOCK.match(body)
        if m["lang"] == "bash":
            code = EXIT.fullmatch(before)
            steps.append(Step(line, shell=body, code=int(code["code"]) if code else 0))
        elif name:
            steps.append(Step(line, file=name["name"], text=body))
    return steps


@pytest.mark.slow
def test_the_readme_walked_top_to_bottom_against_the_wheel(venv: Path, tmp_path: Path) -> None:
    """Every shell block of the README, in order, in an empty directory with the wheel's
    ``chaoseval`` on PATH, saving the files it tells the user to save (issue 21)."""
    steps = readme_steps(README.read_text(encoding="utf-8"))
    assert [s.file for s in steps if s.file] == ["chaoseval.toml", "myagent.py", "test_myagent.py"]
    assert sum(1 for s in steps if s.shell) >= 4
    # The README's pytest block keeps its temporary files here, not beside other runs'.
    env = user_env(
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        PYTEST_ADDOPTS=f"-p no:cacheprovider --basetemp={tmp_path / '.pytest'}",
    )
    which = run("bash", "-c", "command -v chaoseval", cwd=tmp_path, env=env)
    assert Path(which.strip()) == venv / "bin" / "chaoseval"  # the wheel's, not the checkout's
    for step in steps:
        if step.file:
            (tmp_path / step.file).write_text(step.text, encoding="utf-8")
            continue
        assert step.shell is not None
        proc = sh(["bash", "-euo", "pipefail", "-c", step.shell], tmp_path, env)
        why = f"README.md:{step.line}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr}"
        assert proc.returncode == step.code, why
        assert "Traceback" not in proc.stderr, why
