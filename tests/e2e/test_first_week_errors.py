"""Issue 21, point 8: an error the user must fix (here: no Chromium for the browser agents)
reaches the terminal as its one message with the fix, from every executor: no worker
tracebacks around it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.newcomer import env
from tests.e2e.shell import sh

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("executor", ["inprocess", "process", "ray"])
def test_8_missing_chromium_is_one_message_from_any_executor(
    executor: str, tmp_path: Path
) -> None:
    command = (
        "chaoseval run --agent browser-resilient -s ui-checkout -n 1 --journal b.jsonl "
        f"--executor {executor}"
    )
    proc = sh(["bash", "-c", command], tmp_path, env(CHAOSEVAL_CHROMIUM=str(tmp_path / "none")))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and 'File "' not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "apt-get install chromium" in errors[0] and "CHAOSEVAL_CHROMIUM" in errors[0]
