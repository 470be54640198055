"""Running commands as a user would: a subprocess in a directory, no PYTHONPATH from pytest."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def user_env(**extra: str) -> dict[str, str]:
    """The environment without pytest's PYTHONPATH, wide and colourless for assertions."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    return {**env, **extra}


def sh(args: list[str | Path], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
