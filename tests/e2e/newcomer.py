"""What the issue-21 tests share: a user's project in an empty directory, and the CLI run
there as the user typed it (the venv's ``chaoseval`` on PATH, no PYTHONPATH, not the checkout)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.e2e.shell import sh, user_env

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def env(**extra: str) -> dict[str, str]:
    return user_env(PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", **extra)


def chaoseval(command: str, cwd: Path, code: int | None = 0) -> subprocess.CompletedProcess[str]:
    """``command`` as typed in a shell (``chaoseval ...``); ``code``: the exit status expected."""
    proc = sh(["bash", "-c", command], cwd, env())
    if code is not None:
        why = f"{command}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        assert proc.returncode == code, why
    return proc


def study_project(where: Path, settings: str) -> Path:
    """A project of the user's own: a YAML scenario pack under scenarios/ (the bundled library
    example, renamed so it is not installed) and ``settings`` as chaoseval.toml."""
    (where / "scenarios").mkdir(parents=True)
    text = (ROOT / "scenarios" / "library.yaml").read_text(encoding="utf-8")
    text = text.replace("library-renew-loan", "study-renew").replace(
        "library-refuse-overdue", "study-refuse"
    )
    (where / "scenarios" / "study.yaml").write_text(text, encoding="utf-8")
    (where / "chaoseval.toml").write_text(settings, encoding="utf-8")
    return where


def quoted(word: str) -> str:
    return shlex.quote(word)


def flat(text: str) -> str:
    """Terminal output with table borders and wrapping undone: words separated by one space."""
    for border in "│┃":
        text = text.replace(border, " ")
    return " ".join(text.split())
