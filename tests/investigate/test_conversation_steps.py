"""User turns in the views: a turn as a semantic step (what was asked, proposed, and whether
the user agreed or left, never the wording), so twins and diverge compare conversations; the
report's reasons and twins show the conversation as a transcript, escaped per format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console

from chaoseval.analysis.build import analyze
from chaoseval.analysis.reasons import TrialReason
from chaoseval.analysis.twins import timeline, twin_pair
from chaoseval.analysis.verdict import build_verdict
from chaoseval.engine.runner import RunConfig, run
from chaoseval.investigate.diverge import label_divergence
from chaoseval.investigate.semantic import DECODER, SemStep, semantic_steps, user_step
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import AgentOutput, TrialRecord
from chaoseval.render.reasons import print_reasons, reasons_html, reasons_markdown
from chaoseval.render.verdict import twins_html
from chaoseval.seams.agent import Episode, load_agent
from chaoseval.seams.perturbation import CallNext, Perturbation, PerturbationContext, perturbation
from chaoseval.store.columns import read_trials

SCENARIO = "conv-vending-refund"
HOSTILE = "<script>alert(1)</script> [bold red]boom[/] \x1b[31m What is your order number?"


@perturbation("test-user-says-no")
class SaysNo(Perturbation):
    """The user turns down every proposal (what the simulator read stays as it was)."""

    channel: ClassVar = "user"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        reply = await call_next(call)
        if call.reading.confirm:
            ctx.fault("user", "said_no")
            return "No, I do not agree."
        return reply


class HostileTalker:
    """Writes markup, rich markup and an escape sequence to the user, then gives up."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        assert episode.user is not None
        await episode.user.say(HOSTILE)
        return AgentOutput(answer="cannot help", gave_up=True)


def _run(path: Path, agent: Any, cells: list[str]) -> Path:
    run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=agent,
            agent_name="t",
            cells=parse_cells(cells),
            trials=2,
            seed=3,
            journal=path,
            references=False,
        )
    )
    return path


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("conv") / "j.jsonl", load_agent("resilient"),
                ["test-user-says-no"])  # fmt: skip


def _records(path: Path) -> list[TrialRecord]:
    t = read_trials(path)
    return list(t.iter_records(range(len(t))))


def test_a_turn_is_what_was_settled_not_its_wording(refused: Path) -> None:
    clean = next(r for r in _records(refused) if r.cell == "clean")
    steps = semantic_steps(clean)
    turns = [s for s in steps if s.kind == "user"]
    assert turns and turns[-1].result == "agreed" and dict(turns[-1].args)["proposed"]
    assert "asked the user for order_id" in turns[0].describe()
    reworded = clean.model_copy(deep=True)
    for s in reworded.trajectory.steps:
        if s.kind == "user":
            s.args = {"text": "Something else entirely?"}
            s.result = "Other words."
    assert semantic_steps(reworded) == steps
    disagreed = clean.model_copy(deep=True)
    last = [s for s in disagreed.trajectory.steps if s.kind == "user"][-1]
    last.data.agreed = False  # type: ignore[union-attr]
    assert semantic_steps(disagreed) != steps
    # A journal line decoded in part gives the same steps as the record.
    line = next(x for x in refused.read_text().splitlines()[1:] if '"clean"' in x)
    assert semantic_steps(DECODER.decode(line)) == semantic_steps(
        TrialRecord.model_validate_json(line)
    )


def test_diverge_names_the_users_side() -> None:
    ask = user_step(["order_id"], False, False, False)
    agreed = user_step([], True, True, False)
    refused = user_step([], True, False, False, ("said_no",))
    label = label_divergence([ask, refused], 1, [[ask, agreed]])
    assert label == "step 2, user replied instead of agreed [said_no]"
    # The same reading, a fault on the turn: what the agent did next tells.
    noted = user_step([], True, True, False, ("said_no",))
    then = label_divergence([ask, noted, SemStep(kind="answer")], 1, [[ask, agreed]])
    assert then == "step 2, user agreed [said_no]; then answered"
    answered = label_divergence([ask, SemStep(kind="answer")], 1, [[ask, agreed]])
    assert answered == "step 2: answered instead of writing to the user"


def test_twins_show_the_conversation_as_a_transcript(refused: Path) -> None:
    records = _records(refused)
    failed = next(r for r in records if r.cell != "clean" and r.status == "failed")
    clean = next(r for r in records if r.cell == "clean" and r.index == failed.index)
    pair = twin_pair(failed, clean)
    said = [s.text for s in pair.perturbed_steps if s.key.kind == "user"]
    assert any('user: "No, I do not agree."' in x and "agent: " in x for x in said)
    assert any(f.kind == "said_no" for s in pair.perturbed_steps for f in s.faults)
    assert pair.diverge_at is not None and "said_no" in pair.label  # where the user said no
    t = read_trials(refused)
    v = build_verdict(analyze(t, [1], n_resamples=200, references=False), t)
    assert "No, I do not agree." in twins_html(v, str(refused))


def test_reasons_show_the_conversation_escaped_in_every_format(tmp_path: Path) -> None:
    path = _run(tmp_path / "j.jsonl", HostileTalker(), [])
    t = read_trials(path)
    record = next(iter(t.iter_records([0])))
    reason = TrialReason.of(record)
    assert reason.turns and reason.turns[0].startswith('turn 1: agent: "<script>')
    assert reason.to_json()["conversation"] == list(reason.turns)
    v = build_verdict(analyze(t, [1], n_resamples=200, references=False), t)
    html = reasons_html(v)
    assert "<script>" not in html and "&lt;script&gt;" in html
    md = "\n".join(reasons_markdown(v))
    assert "<script>" not in md and "&lt;script>" in md
    console = Console(record=True, width=400, force_terminal=True)
    print_reasons(v, console)
    shown = console.export_text(styles=False)
    assert "[bold red]boom[/]" in shown  # printed as text, not taken for markup
    assert "\\x1b[31m" in shown and "\x1b" not in shown  # the escape seen, never obeyed
    assert json.loads(json.dumps(reason.to_json()))["conversation"]


def test_a_trial_without_a_user_has_no_transcript(tmp_path: Path) -> None:
    record = _records(_run(tmp_path / "j.jsonl", HostileTalker(), []))[0]
    plain = record.model_copy(deep=True)
    plain.trajectory.steps = [s for s in plain.trajectory.steps if s.kind != "user"]
    assert TrialReason.of(plain).turns == ()
    assert "conversation" not in TrialReason.of(plain).to_json()
    assert all(s.key.kind != "user" for s in timeline(plain))
