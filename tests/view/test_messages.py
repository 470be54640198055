"""A trial's page shows each model step's messages and answer from the trial's model.jsonl,
beside its clean twin's, escaped and redacted, through a real view server on 127.0.0.1 over a
real run (an exec: agent on the real openai and anthropic SDKs, chaoseval-sim answering)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import escape
from pathlib import Path

import pytest

from chaoseval.model.records import TrialRecord
from tests.channels.transcript_support import MARKUP, SECRET, model_file, write_run
from tests.view.conftest import Served


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[TrialRecord]]:
    folder = tmp_path_factory.mktemp("view-messages")
    return folder, write_run(folder / "exec")


def _columns(page: str) -> tuple[str, str]:
    mine, theirs = page.split("<section class='side' id='clean'>")
    return mine, theirs


def test_a_trial_page_shows_each_model_steps_messages_beside_its_twins(
    written: tuple[Path, list[TrialRecord]], serve: Callable[[Path], Served]
) -> None:
    root, records = written
    faulted = next(r for r in records if r.cell != "clean")
    view = serve(root)
    page = view.get("/trial", params={"j": "exec/run.jsonl", "id": faulted.trial_id}).text
    mine, theirs = _columns(page)
    # Collapsed by default (no ``open``), one per model step on each side.
    model_steps = sum(s.kind == "model" for s in faulted.trajectory.steps)
    assert mine.count("<details class='messages'>") == model_steps == 4
    assert theirs.count("<details class='messages'>") == 4
    assert "<details class='messages' open" not in page
    # The perturbed side: what was sent and the fault written instead; the twin: answers.
    assert "Responses says hello" in mine and "Anthropic system" in mine
    assert mine.count("fault written instead") == 4 and "; no answer</summary>" in mine
    assert theirs.count("<div class='msg answer'>") == 4
    assert "messages: 2 sent after the first 2, as in step 1; the answer" in theirs
    # The agent's text is text: escaped, never markup; the secret never shown.
    assert escape(MARKUP) in mine and MARKUP not in page
    assert SECRET not in page and "api_key=[REDACTED]" in page
    # The oversized message, cut with its note.
    assert re.search(r"BIGx+\[\.\.\. cut by chaoseval: 100003 characters in full\]", page)


def test_a_hostile_model_file_is_shown_as_text(
    written: tuple[Path, list[TrialRecord]],
    serve: Callable[[Path], Served],
    tmp_path: Path,
) -> None:
    """The artifact is a journal's word: a line of odd types, markup and a note of its own
    are shown escaped; lines that are not JSON objects are skipped."""
    import shutil

    root, records = written
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    clean = next(r for r in records if r.cell == "clean")
    path = model_file(copy / "exec", clean)
    step = next(s.index for s in clean.trajectory.steps if s.kind == "model")
    hostile = {"step": step, "messages": [{"role": "<script>alert(1)</script>", "content": 7,
                "tool_calls": ["<img src=x>", {"name": "<i>n</i>"}]}, "<u>plain</u>"],
               "answer": {"content": ["</details><b>"]}, "repeats": {"step": "x"}}  # fmt: skip
    lines = ["not json", "[1, 2]", json.dumps({"cut": "<b>note</b>"}), json.dumps(hostile)]
    path.write_text("\n".join(lines) + "\n")
    page = serve(copy).get("/trial", params={"j": "exec/run.jsonl", "id": clean.trial_id}).text
    for bad in ("<script>alert(1)</script>", "<img src=x>", "<i>n</i>", "<u>plain</u>",
                "</details><b>", "<b>note</b>"):  # fmt: skip
        assert bad not in page
    assert escape("<script>alert(1)</script>") in page
    assert escape("<b>note</b>") in page
