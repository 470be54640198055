"""A full disk is the harness's failure, never the agent's (issue 39, item 5): on a real tmpfs
too small for the run, `chaoseval run` stops with exit code 4 and one message (the file,
ENOSPC, how to resume), records no trial the disk spoiled, leaves no half line and no empty
journal, and `--resume` on a disk with room runs what was not recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chaoseval.exitcodes import EXIT_HARNESS
from tests.e2e.journal_cli import chaoseval, lines, run_args

pytestmark = pytest.mark.slow

# stderr of 40,000 characters: an artifact that does not fit on a 64 KB disk beside the journal
NOISY_AGENT = """\
import json, sys
sys.stderr.write("e" * 40000)
print(json.dumps({"answer": "done"}))
"""

Disk = tuple[Path, Callable[[str], None]]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Disk]:
    """A tmpfs of 64 KB, and a way to give it more room (``resize("16m")``)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root: run as root to test a real full disk")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)

    def resize(size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)

    try:
        yield disk, resize
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def _said(proc: subprocess.CompletedProcess[str]) -> str:
    return " ".join(proc.stderr.split())


def _assert_stopped(proc: subprocess.CompletedProcess[str], where: str) -> None:
    said = _said(proc)
    assert proc.returncode == EXIT_HARNESS, proc.stderr
    assert "the run stopped on a harness error" in said and "ENOSPC" in said, said
    assert where in said and "--resume" in said, said
    assert "Traceback" not in proc.stderr


def _assert_whole(journal: Path) -> list[dict[str, object]]:
    """Every line of the journal whole (no half line at its end), none of them a crash."""
    raw = journal.read_text()
    assert raw.endswith("\n")
    records = [json.loads(line) for line in raw.splitlines()][1:]
    assert all(r["root_cause"] != "crash" for r in records), records
    return records


def test_a_full_journal_disk_stops_the_run_and_resume_finishes_it(small_disk: Disk) -> None:
    disk, resize = small_disk
    journal = disk / "j.jsonl"
    args = run_args(journal, trials=40)
    stopped = chaoseval(args, disk.parent)
    _assert_stopped(stopped, str(journal))
    kept = _assert_whole(journal)
    assert 0 < len(kept) < 40

    resize("16m")
    resumed = chaoseval([*args, "--resume"], disk.parent)
    assert resumed.returncode == 0, resumed.stderr
    records = _assert_whole(journal)
    assert sorted(int(str(r["trial_id"]).rsplit("/", 1)[1]) for r in records) == list(range(40))


def test_a_full_artifact_store_is_no_crash_of_the_agent(small_disk: Disk) -> None:
    disk, resize = small_disk
    journal = disk / "j.jsonl"
    agent = disk.parent / "noisy.py"
    agent.write_text(NOISY_AGENT)
    args = run_args(
        journal, "--sandbox", "none", "-j", "1", agent=f"exec:{sys.executable} {agent}", trials=3
    )
    stopped = chaoseval(args, disk.parent)
    _assert_stopped(stopped, "stderr.txt")
    assert len(_assert_whole(journal)) < 3

    resize("16m")
    resumed = chaoseval([*args, "--resume"], disk.parent)
    assert resumed.returncode == 0, resumed.stderr
    records = _assert_whole(journal)
    assert len(records) == 3 and all(r["status"] != "not_evaluable" for r in records)


def test_a_manifest_that_does_not_fit_leaves_no_journal(small_disk: Disk) -> None:
    disk, resize = small_disk
    resize("4k")  # one page: the manifest of these scenarios is some 10 KB
    journal = disk / "j.jsonl"
    args = [*run_args(journal), "-s", "vending-*", "-s", "drift-*"]
    stopped = chaoseval(args, disk.parent)
    _assert_stopped(stopped, str(journal))
    assert list(disk.iterdir()) == []  # no empty journal, no lock, no half-written manifest

    resize("16m")
    fresh = chaoseval(args, disk.parent)  # neither --overwrite nor --resume is needed
    assert fresh.returncode == 0, fresh.stderr
    assert lines(journal)[0]["type"] == "manifest"
