"""A run being written: the view re-reads its journal when it grows, shows the trials that
landed, and leaves a half-written last line out until it is whole."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from tests.view.conftest import Served


def _count(view: Served, j: str) -> tuple[int, str]:
    text = view.get("/fragment/trials", params={"j": j}).text
    found = re.search(r"(\d+) of (\d+) trial\(s\) in the journal match", text)
    assert found, text
    return int(found.group(2)), text


def test_trials_appear_as_they_land_and_a_torn_line_waits(
    runs: Path, tmp_path: Path, serve: Callable[[Path], Served]
) -> None:
    written = (runs / "release-1" / "run.jsonl").read_bytes().splitlines(keepends=True)
    manifest, trials = written[0], written[1:]
    root = tmp_path / "live"
    root.mkdir()
    journal = root / "now.jsonl"
    journal.write_bytes(manifest)
    view = serve(root)
    assert _count(view, "now.jsonl")[0] == 0
    page = view.get("/run", params={"j": "now.jsonl"}).text
    assert "data-live='/fragment/trials?j=now.jsonl'" in page
    assert view.get("/fragment/report", params={"j": "now.jsonl"}).status_code == 200
    with journal.open("ab") as fh:
        fh.write(b"".join(trials[:3]))
        fh.write(trials[3][: len(trials[3]) // 2])  # a writer halfway through a line
    count, text = _count(view, "now.jsonl")
    assert count == 3
    assert trials[3].decode().split('"trial_id":"')[1].split('"')[0] not in text
    with journal.open("ab") as fh:
        fh.write(trials[3][len(trials[3]) // 2 :])
        fh.write(b"".join(trials[4:]))
    assert _count(view, "now.jsonl")[0] == len(trials)
    # The report follows too once it has trials of both arms.
    assert "<section id='verdict'>" in view.get("/fragment/report", params={"j": "now.jsonl"}).text
