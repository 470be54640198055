"""A trial's model messages as its model.jsonl artifact (channels/model/transcript.py): written
by a real run through the wire, keyed by model step, redacted, cut with a note."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from model_support import SCENARIO
from test_model_upstreams import UPSTREAM_KEY, Recorder
from transcript_support import BIG, MARKUP, SECRET, model_file, write_run

from chaoseval import redact
from chaoseval.agents.openai_agents import OpenAIAgent
from chaoseval.channels.asgi import serve_asgi
from chaoseval.channels.model import transcript
from chaoseval.channels.model.calls import ModelCall, ModelReply
from chaoseval.channels.model.session import UpstreamConfig
from chaoseval.engine.runner import RunConfig, run_matrix
from chaoseval.loading.files import installed, select
from chaoseval.model.records import TrialRecord
from chaoseval.store.artifacts import ArtifactStore


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[TrialRecord]]:
    folder = tmp_path_factory.mktemp("transcript")
    return folder, write_run(folder)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_model_step_has_its_messages_and_answer_in_every_api_shape(written) -> None:
    folder, records = written
    clean = next(r for r in records if r.cell == "clean")
    lines = _lines(model_file(folder, clean))
    steps = [s.index for s in clean.trajectory.steps if s.kind == "model"]
    assert [line["step"] for line in lines] == steps  # one line per model step, in order
    assert [line["endpoint"] for line in lines] == ["chat", "chat", "responses", "messages"]
    first, second, responses, messages = lines
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert MARKUP in first["messages"][1]["content"]  # the agent's text, as it sent it
    assert first["answer"]["role"] == "assistant" and "finish_reason" in first["answer"]
    # The second request resends the first two messages: it lists only what came after.
    assert second["repeats"] == {"step": first["step"], "messages": 2}
    assert [m["role"] for m in second["messages"]] == ["assistant", "user"]
    # Responses and Anthropic requests read as the chat messages they mean.
    assert responses["messages"] == [
        {"role": "system", "content": "Responses instructions"},
        {"role": "user", "content": "Responses says hello"},
    ]
    assert messages["messages"][0] == {"role": "system", "content": "Anthropic system"}
    assert messages["messages"][1]["content"] == "Messages says hello"
    assert all("answer" in line and "fault" not in line for line in lines)


def test_a_fault_written_instead_of_an_answer_is_the_steps_answer(written) -> None:
    folder, records = written
    faulted = next(r for r in records if r.cell != "clean")
    lines = _lines(model_file(folder, faulted))
    assert len(lines) == 4 and all(line["status"] == 429 for line in lines)
    assert all("answer" not in line and line["class"] == "http_error" for line in lines)
    assert all(line["fault"] for line in lines)  # the plugin's error text, as written


def test_a_secret_in_a_message_never_reaches_the_file(written) -> None:
    folder, records = written
    for record in records:
        text = model_file(folder, record).read_text()
        assert SECRET not in text
        assert f"api_key={redact.MARKER}" in text
    everything = "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()
                         and p.name != "agent.py")  # fmt: skip
    assert SECRET not in everything


def test_an_oversized_message_is_cut_with_a_note(written) -> None:
    folder, records = written
    clean = next(r for r in records if r.cell == "clean")
    second = _lines(model_file(folder, clean))[1]
    big = second["messages"][-1]["content"]
    assert big.startswith("BIGxxx") and len(big) < BIG
    assert big.endswith(f"[... cut by chaoseval: {BIG + 3} characters in full]")


def test_past_the_file_limit_the_latest_steps_are_kept_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Room for one line only: the latest step is kept, listing all its messages, and the
    file's first line says how many were not."""
    monkeypatch.setattr(transcript, "LINE_LIMIT", 10_000)
    monkeypatch.setattr(transcript, "FILE_LIMIT", 10_001)
    records = write_run(tmp_path)
    clean = next(r for r in records if r.cell == "clean")
    note, *kept = _lines(model_file(tmp_path, clean))
    assert "the first 3 model step(s) of this trial are not kept" in note["cut"]
    assert [line["endpoint"] for line in kept] == ["messages"]
    assert "repeats" not in kept[0] and len(kept[0]["messages"]) == 2


def _line(messages: list[dict]) -> dict:
    return {"step": 4, "call": 2, "attempt": 1, "endpoint": "chat", "status": 200,
            "class": "ok", "messages": messages, "answer": {"role": "assistant"}}  # fmt: skip


def test_a_line_past_its_limit_cuts_its_strings_shorter_then_its_earliest_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transcript, "LINE_LIMIT", 10_000)
    redactor = redact.current()
    # One huge message among short ones, too long with TEXT_LIMIT: every string cut at
    # SHORT_TEXT, all messages kept.
    few = [{"role": "user", "content": "y" * 10}] * 5 + [{"role": "user", "content": "z" * BIG}]
    line = json.loads(transcript._fitted(_line(few), redactor))
    assert len(line["messages"]) == 6 and "cut" not in line
    assert line["messages"][-1]["content"].endswith(f"[... cut by chaoseval: {BIG} characters"
                                                    " in full]")  # fmt: skip
    assert len(line["messages"][-1]["content"]) < transcript.SHORT_TEXT + 100
    # Many long ones: the earliest left out, said on the line; the latest kept.
    many = [{"role": "user", "content": f"{i:04d}" + "w" * 3000} for i in range(100)]
    text = transcript._fitted(_line(many), redactor)
    line = json.loads(text)
    assert len(text) <= 10_000
    assert line["cut"].startswith(f"the first {100 - len(line['messages'])} of this request's"
                                  " 100 message(s) listed here are not kept")  # fmt: skip
    assert line["messages"][-1]["content"].startswith("0099")
    # A secret in a message is replaced before any cut.
    secret = [{"role": "user", "content": "x" * (transcript.SHORT_TEXT - 10) + f" api_key={SECRET}"
               + "z" * BIG}]  # fmt: skip
    assert SECRET[:8] not in transcript._fitted(_line(secret), redactor)


def test_openai_naive_forwarded_keeps_what_it_sent_and_the_upstreams_answer_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real openai SDK through the channel to a --model-endpoint (the agent's bytes passed
    on, the answer's bytes written back unread): the file holds both, and the upstream key a
    leaky upstream put in its answer is redacted."""
    monkeypatch.setenv("CHAOSEVAL_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
    recorder = Recorder(echo=True)
    journal = tmp_path / "run.jsonl"

    async def main() -> list[TrialRecord]:
        async with serve_asgi(recorder.app) as url:
            config = UpstreamConfig(endpoint=f"{url}/v1", key_env="CHAOSEVAL_TEST_UPSTREAM_KEY")
            result = await run_matrix(
                RunConfig(
                    scenarios=select(installed(), [SCENARIO]),
                    agent=OpenAIAgent(resilient=False, upstream=config),
                    agent_name="openai-naive",
                    trials=1,
                    seed=3,
                    journal=journal,
                    references=False,
                )
            )
            return result.records

    [record] = anyio.run(main)
    [line] = _lines(model_file(tmp_path, record))
    [(_, sent)] = recorder.seen
    assert line["step"] == next(s.index for s in record.trajectory.steps if s.kind == "model")
    assert [m["content"] for m in line["messages"]] == [m["content"] for m in sent["messages"]]
    assert line["answer"]["content"] == json.dumps({"answer": f"scripted, key {redact.MARKER}"})
    assert UPSTREAM_KEY not in model_file(tmp_path, record).read_text()


def test_requests_held_past_the_trials_bounds_are_let_go_oldest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the trial runs at most HELD_STEPS requests and HELD_LIMIT bytes of bodies are
    held: past them the oldest go (a body first, the whole step past the count), each said."""
    monkeypatch.setattr(transcript, "HELD_LIMIT", 10_000)
    monkeypatch.setattr(transcript, "HELD_STEPS", 50)
    kept = transcript.Transcript(ArtifactStore(tmp_path / "j.jsonl.d").trial("s/clean/0"))
    said: list[dict] = []
    for i in range(80):
        said.append({"role": "user", "content": f"m{i} " + "x" * 200})
        done = {"choices": [{"message": {"content": f"a{i}"}, "finish_reason": "stop"}]}
        kept.add(ModelCall("chat", {}, False, i, 1, i, 2 * i), json.dumps({"messages": said})
                 .encode(), ModelReply(completion=done), 200, "ok", None)  # fmt: skip
    kept.write()
    note, *lines = _lines(kept.store.directory / "model.jsonl")
    assert note["cut"].startswith("the first 30 model step(s) of this trial are not kept: 30 let"
                                  " go while it ran")  # fmt: skip
    assert [line["step"] for line in lines] == [2 * i for i in range(30, 80)]
    assert [line["answer"]["content"] for line in lines] == [f"a{i}" for i in range(30, 80)]
    # Only the latest body fits in 10,000 bytes: the others' lines say so, and the latest,
    # whose request before it was let go, lists every message of its own.
    assert all(line["request"].startswith("request not kept") for line in lines[:-1])
    assert len(lines[-1]["messages"]) == 80 and "repeats" not in lines[-1]
