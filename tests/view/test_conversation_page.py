"""A conversation on `chaoseval view`'s trial page: each turn a transcript (the agent's message,
the user's reply, what the user made of it, the faults on the turn), every text redacted and
escaped as the page's other texts are."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.seams.agent import load_agent
from chaoseval.seams.perturbation import CallNext, Perturbation, PerturbationContext, perturbation
from tests.view.conftest import Served

SECRET = "sk-view-conv-0123456789abcdef"
SCRIPT = "<script>alert(1)</script>"


@perturbation("test-view-user-typo")
class Typo(Perturbation):
    """A fault on every turn: the reply gets a typo."""

    channel: ClassVar = "user"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        reply = await call_next(call)
        ctx.fault("user", "typo")
        return None if reply is None else reply + " tpyo"


def test_a_trials_conversation_is_a_transcript(
    tmp_path: Path, serve: Callable[[Path], Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "view"
    journal = root / "conv.jsonl"
    root.mkdir()
    run(
        RunConfig(
            scenarios=select(installed(), ["conv-vending-refund"]),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(["test-view-user-typo"]),
            trials=1,
            seed=2,
            journal=journal,
            references=False,
        )
    )
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    trial = next(d for d in lines if d.get("cell") == "test-view-user-typo")
    first = next(s for s in trial["trajectory"]["steps"] if s["kind"] == "user")
    first["args"]["text"] = f"{SCRIPT} What is your order number? key {SECRET}"
    journal.write_text("".join(json.dumps(d) + "\n" for d in lines))
    monkeypatch.setenv("VIEW_CONV_TEST_API_KEY", SECRET)  # a secret only now: the view redacts

    view = serve(root)
    page = view.get("/trial", params={"j": "conv.jsonl", "id": trial["trial_id"]}).text
    mine = page.split("id='this'")[1].split("id='clean'")[0]
    turns = [x.split("<div class='step")[0] for x in mine.split("<div class='step turn")[1:]]
    assert len(turns) == sum(s["kind"] == "user" for s in trial["trajectory"]["steps"])
    assert "<b>agent</b><pre>&lt;script&gt;alert(1)&lt;/script&gt; What is your order" in mine
    assert "key [REDACTED]" in mine and SECRET not in page and "<script>alert" not in page
    assert "<b>user</b><pre>" in turns[0] and "tpyo</pre>" in turns[0]
    assert "fault <b>test-view-user-typo/typo</b> on the user channel" in turns[0]
    # What the simulated user read of the proposal's turn.
    assert "stated order_id, amount; the user agreed" in turns[-1]
    twin = page.split("id='clean'")[1]
    assert "class='step turn" in twin and "tpyo" not in twin  # the clean twin's conversation
