"""One writer per journal (issue 39, item 4): a second `chaoseval run` on a journal another run
is writing is refused at once, naming that run, and touches nothing; readers never wait."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.e2e.journal_cli import (
    PATIENCE,
    chaoseval,
    command,
    lines,
    release,
    run_args,
    waiting_run,
)

pytestmark = pytest.mark.slow

SECRET = "sk-live-0123456789abcdef"


@pytest.mark.parametrize("second", ["--overwrite", "--resume"])
def test_a_second_writer_is_refused_at_once_and_the_first_runs_writes_stand(
    tmp_path: Path, second: str
) -> None:
    journal = tmp_path / "j.jsonl"
    # A key in the first run's command line: named in the refusal, never written or said.
    first = waiting_run(journal, tmp_path, "--overwrite", "--model", SECRET, API_KEY=SECRET)
    try:
        assert SECRET not in (tmp_path / "j.jsonl.d" / ".lock").read_text()
        before = journal.read_bytes()
        refused = chaoseval(run_args(journal, second), tmp_path, API_KEY=SECRET)
        assert refused.returncode == 2, refused.stderr
        said = " ".join(refused.stderr.split())
        assert f"j.jsonl is being written by process {first.pid} (" in said, said
        assert "--overwrite --model [REDACTED]" in said.split(f"process {first.pid} (")[1]
        assert SECRET not in refused.stderr
        assert "another --journal" in said and "Traceback" not in said
        assert journal.read_bytes() == before  # not truncated, not appended to

        # Readers neither take the lock nor wait for it.
        report = chaoseval(command("report", str(journal)), tmp_path)
        assert report.returncode == 0, report.stderr
    finally:
        release(tmp_path)
        out, err = first.communicate(timeout=PATIENCE)
    assert first.returncode == 0, err
    assert "wrote 2 trial(s)" in out
    written = lines(journal)
    assert [r["type"] for r in written] == ["manifest", "trial", "trial"]
    assert {r["run_id"] for r in written} == {written[0]["run_id"]}
    assert sorted(r["trial_id"] for r in written[1:]) == [
        "vending-refund-log-down/clean/0",
        "vending-refund-log-down/clean/1",
    ]
    # Let go with the run: nothing is left beside the journal, and the next writer goes on.
    assert not (tmp_path / "j.jsonl.d" / ".lock").exists()
    again = chaoseval(run_args(journal, "--overwrite"), tmp_path)
    assert again.returncode == 0, again.stderr


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    first = waiting_run(journal, tmp_path, "--overwrite")
    os.kill(first.pid, signal.SIGKILL)  # no chance to let go of anything itself
    first.communicate(timeout=PATIENCE)
    release(tmp_path)  # its agent, if still alive, ends
    replaced = chaoseval(run_args(journal, "--overwrite"), tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert "wrote 2 trial(s)" in replaced.stdout
