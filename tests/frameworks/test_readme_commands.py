"""examples/README.md's Node command runs as shown, under the default sandbox (issue 42, item 2:
it crashed 72 of 72 trials there, its packages invisible inside bubblewrap).

The command is read from the README, not copied here, so a change to the README is what is
tested; only ``--journal`` is added, so that the run writes into the test's directory rather
than the clone's."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.frameworks.matrix import FRAMEWORKS, ROOT, installed

pytestmark = pytest.mark.frameworks


def _commands(readme: Path) -> list[str]:
    """Every ``chaoseval run`` command of the README's bash blocks, continuations joined."""
    blocks = re.findall(r"```bash\n(.*?)```", readme.read_text(), re.DOTALL)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [" ".join(x.split()) for x in lines if x.startswith("chaoseval run ")]


def test_the_node_command_runs_as_shown_under_the_default_sandbox(
    tmp_path: Path, bwrap: str
) -> None:
    """``bwrap``: bubblewrap works here, so the default sandbox (auto) is bubblewrap."""
    installed(FRAMEWORKS["node"])
    (command,) = [c for c in _commands(ROOT / "examples" / "README.md") if "exec:node" in c]
    # The links the command names (.cache/frameworks/node) are what `make frameworks` makes.
    subprocess.run(["make", "frameworks"], cwd=ROOT, check=True, capture_output=True)
    journal = tmp_path / "node.jsonl"
    argv = [sys.executable, "-m", "chaoseval", *shlex.split(command)[1:]]
    done = subprocess.run(
        [*argv, "--journal", str(journal), "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if k != "NODE_PATH"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    manifest, trials = lines[0], lines[1:]
    assert manifest["isolation"]["sandbox"] == "bwrap", manifest["isolation"]
    assert trials and {t["status"] for t in trials} == {"passed"}, [
        (t["status"], t.get("error")) for t in trials
    ]
