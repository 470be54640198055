"""Issue 21, point 10: an Inspect log whose eval never reached its model (every sample an
error, none scored) is refused with that said, not imported as not-evaluable trials under an
invented temperature."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.newcomer import chaoseval, flat

pytestmark = pytest.mark.slow

UNREACHABLE = "Connection error: could not reach http://127.0.0.1:9/v1 (connection refused)"


def test_10_an_inspect_log_with_no_scored_samples_is_refused(tmp_path: Path) -> None:
    # The shape `inspect eval` writes when its model is unreachable: status "error", each
    # sample with its error and no scores (inspect-ai 0.3 JSON log).
    samples = [
        {"id": i, "epoch": e, "input": "q", "scores": {}, "error": {"message": UNREACHABLE}}
        for i in range(1, 5)
        for e in range(1, 6)
    ]
    log = {
        "version": 2,
        "status": "error",
        "eval": {"task": "refunds", "model": "openai/gpt-4o-mini", "run_id": "r1"},
        "error": {"message": UNREACHABLE, "traceback": "Traceback ...\n"},
        "samples": samples,
    }
    (tmp_path / "log.json").write_text(json.dumps(log))
    proc = chaoseval("chaoseval report --from inspect log.json", tmp_path, code=2)
    message = flat(proc.stderr)
    assert "holds no scored samples" in message and "could not reach" in message
    assert "T=0.7" not in proc.stdout and "Traceback" not in proc.stderr
