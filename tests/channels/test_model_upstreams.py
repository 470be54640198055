"""Upstreams other than chaoseval-sim, and the Responses API, over real sockets."""

from __future__ import annotations

import json
import queue
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from model_support import SCENARIO, info, model_steps, probe_trial
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from typer.testing import CliRunner

from chaoseval.agents.openai_agents import OpenAIAgent
from chaoseval.agents.process import ProcessAgent
from chaoseval.channels.asgi import serve_asgi
from chaoseval.channels.model.session import UpstreamConfig, trial_endpoint
from chaoseval.cli.app import app
from chaoseval.engine.runner import RunConfig, run, run_matrix
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings, TrialRecord
from chaoseval.seams.agent import Episode
from chaoseval.store.journal import read_journal

UPSTREAM_KEY = "sk-upstream-planted-0123456789"


class Recorder:
    """A scripted OpenAI-compatible server that knows nothing of trials: it answers every
    request with the same final message and keeps what reached it."""

    def __init__(self, echo: bool = False) -> None:
        self.echo = echo  # a leaky upstream: puts the key it got into its answer
        self.seen: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.seen.append((dict(request.headers), body))
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        answer = f"scripted, key {key}" if self.echo else "scripted"
        message = {"role": "assistant", "content": json.dumps({"answer": answer})}
        return JSONResponse(
            {
                "id": "chatcmpl-rec",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
            }
        )


def run_forwarded(agent_factory: Any, cells: list[str]) -> tuple[Recorder, list[TrialRecord]]:
    recorder = Recorder()

    async def main() -> list[TrialRecord]:
        async with serve_asgi(recorder.app) as url:
            config = UpstreamConfig(endpoint=f"{url}/v1", key_env="CHAOSEVAL_TEST_UPSTREAM_KEY")
            result = await run_matrix(
                RunConfig(
                    scenarios=select(installed(), [SCENARIO]),
                    agent=agent_factory(config),
                    agent_name="forwarded",
                    cells=parse_cells(cells),
                    trials=1,
                    seed=3,
                    model=ModelSettings(model="gpt-4o-mini", temperature=0.2, seed=1),
                )
            )
            return result.records

    return recorder, anyio.run(main)


@pytest.mark.parametrize("stream", [False, True])
def test_model_endpoint_forwards_to_a_real_api_with_the_upstream_key(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAOSEVAL_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
    recorder, records = run_forwarded(
        lambda config: OpenAIAgent(resilient=False, stream=stream, upstream=config),
        ["sampling:temperature=1.3,seed=9"],
    )
    clean, sampled = records
    assert clean.answer == sampled.answer == "scripted"
    (clean_seen, clean_body), (sampled_seen, sampled_body) = recorder.seen
    assert clean_seen["authorization"] == sampled_seen["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert "stream" not in clean_body  # the channel streams to the agent itself
    assert (clean_body["model"], clean_body["temperature"], clean_body["seed"]) == (
        "gpt-4o-mini",
        0.2,
        1,
    )
    assert (sampled_body["temperature"], sampled_body["seed"]) == (1.3, 9)
    step = model_steps(sampled)[0]
    assert (info(step)["temperature"], info(step)["seed"], info(step)["cost"]) == (1.3, 9, 2.85e-06)


# An agent process on the openai SDK alone: one request, its answer, and whether it could see
# the upstream key (it must not: the channel holds it).
EXEC_AGENT = """
import json, os, openai
client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY: the trial's channel
done = client.chat.completions.create(
    model=os.environ["CHAOSEVAL_MODEL"], messages=[{"role": "user", "content": "hi"}]
)
seen = "key-visible" if os.environ.get("CHAOSEVAL_TEST_UPSTREAM_KEY") else "key-hidden"
answer = json.loads(done.choices[0].message.content)["answer"]
print(json.dumps({"answer": answer + " " + seen}))
"""


def test_an_exec_agent_reaches_the_model_endpoint_through_its_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAOSEVAL_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
    script = tmp_path / "agent.py"
    script.write_text(EXEC_AGENT)
    recorder, records = run_forwarded(
        lambda config: ProcessAgent(f"{sys.executable} {script}", upstream=config),
        ["sampling:temperature=1.3,seed=9"],
    )
    clean, sampled = records
    assert clean.answer == sampled.answer == "scripted key-hidden", clean.error
    # Only upstream of chaoseval is the real key sent; the trials ran at once, in any order.
    assert {h["authorization"] for h, _ in recorder.seen} == {f"Bearer {UPSTREAM_KEY}"}
    bodies = sorted((b for _, b in recorder.seen), key=lambda b: b["temperature"])
    assert [b["model"] for b in bodies] == ["gpt-4o-mini"] * 2  # --model, as it was told
    # The process set none: the channel applied the configured settings, and says so.
    assert (bodies[0]["temperature"], bodies[0]["seed"]) == (0.2, 1)
    sent = info(model_steps(clean)[0])
    assert (sent["sent_temperature"], sent["sent_seed"], sent["temperature"]) == (None, None, 0.2)
    assert (bodies[1]["temperature"], bodies[1]["seed"]) == (1.3, 9)  # sampling rewrote it
    assert [info(s)["status"] for s in model_steps(clean)] == [200]


def test_model_faults_apply_in_front_of_a_forwarded_upstream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CHAOSEVAL_TEST_UPSTREAM_KEY", raising=False)
    recorder, records = run_forwarded(
        lambda config: OpenAIAgent(resilient=True, upstream=config),
        ["model_error:modes=429,first_n=2,retry_after=0.01,probability=1"],
    )
    faulted = records[1]
    assert faulted.answer == "scripted"
    assert [info(s)["status"] for s in model_steps(faulted)] == [429, 429, 200]
    assert len(recorder.seen) == 2  # the 429s never reached the upstream
    assert "authorization" not in recorder.seen[1][0]  # no key in the environment: none sent


def test_cli_model_endpoint_sends_the_run_to_that_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chaoseval run --model-endpoint URL --model-key-env NAME``, the recorder in a thread."""
    recorder, stop, ready = Recorder(echo=True), threading.Event(), queue.Queue[str]()

    async def serve() -> None:
        async with serve_asgi(recorder.app) as url:
            ready.put(url)
            while not stop.is_set():
                await anyio.sleep(0.02)

    thread = threading.Thread(target=anyio.run, args=(serve,), daemon=True)
    thread.start()
    url = ready.get(timeout=30)
    monkeypatch.setenv("LLM_CRED", UPSTREAM_KEY)  # a name that does not look secret
    journal = tmp_path / "wire.jsonl"
    args = ["run", "--agent", "openai-naive", "-s", SCENARIO, "-n", "1", "--no-report"]
    args += ["--model-endpoint", f"{url}/v1", "--model-key-env", "LLM_CRED"]
    prices = tmp_path / "prices.toml"  # the recorder answers 7 input and 3 output tokens
    prices.write_text('["sim-1"]\ninput = 1000\noutput = 2000\n')
    result = CliRunner().invoke(app, [*args, "--journal", str(journal), "--prices", str(prices)])
    stop.set()
    thread.join(10)
    assert result.exit_code == 0, result.output
    assert [body["model"] for _, body in recorder.seen] == ["sim-1"]
    assert recorder.seen[0][0]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    (record,) = read_journal(journal).records
    assert record.answer is not None and record.answer.startswith("scripted, key ")
    assert UPSTREAM_KEY not in journal.read_text() and UPSTREAM_KEY not in result.output
    [step] = [s for s in record.trajectory.steps if s.kind == "model"]
    assert step.data.cost == pytest.approx((7 * 1000 + 3 * 2000) / 1e6)  # from --prices
    assert record.usage.cost == pytest.approx(step.data.cost)
    refused = CliRunner().invoke(app, [*args[:-4], "--agent", "naive", "--model-endpoint", url])
    assert refused.exit_code != 0 and "over the wire" in refused.output


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("p.toml", '["gpt-4o"]\ninput = "cheap"\n', "needs numbers 'input' and 'output'"),
        ("p.json", "{not json", "not valid JSON"),
        ("p.toml", "", "expected a table of models"),
    ],
)
def test_a_bad_price_table_is_refused_with_its_place_and_fix(
    tmp_path: Path, name: str, text: str, says: str
) -> None:
    (tmp_path / name).write_text(text)
    args = ["run", "--agent", "openai-naive", "-s", SCENARIO, "-n", "1", "--no-report"]
    result = CliRunner().invoke(
        app, [*args, "--journal", str(tmp_path / "j.jsonl"), "--prices", str(tmp_path / name)]
    )
    output = " ".join(result.output.split())  # the console wraps long lines
    assert result.exit_code != 0 and says in output and "--prices" in output
    assert not (tmp_path / "j.jsonl").exists()


def test_an_upstream_error_reaches_the_agent_as_it_was_with_the_key_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refusal of the upstream is relayed (status, Retry-After) as the upstream's, not as a
    chaoseval fault, and an upstream that echoes the key in its text never passes it on."""
    from starlette.responses import PlainTextResponse

    from chaoseval.channels.model.calls import ModelCall, ModelHTTPFault
    from chaoseval.channels.model.forward import forward_upstream

    async def refuse(request: Request) -> PlainTextResponse:
        await request.body()
        auth = request.headers.get("authorization", "")
        headers = {"retry-after": "7", "x-other": "dropped"}
        return PlainTextResponse(f"slow down, {auth}", 429, headers=headers)

    async def ok(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"error": {"message": f"no model {body['model']}"}}, 404)

    monkeypatch.setenv("CHAOSEVAL_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
    server = Starlette(
        routes=[
            Route("/a/chat/completions", refuse, methods=["POST"]),
            Route("/b/chat/completions", ok, methods=["POST"]),
        ]
    )

    async def main() -> list[ModelHTTPFault]:
        faults = []
        async with serve_asgi(server) as url:
            for base in ("a", "b"):
                async with forward_upstream(f"{url}/{base}", "CHAOSEVAL_TEST_UPSTREAM_KEY") as up:
                    call = ModelCall("chat", {"model": "m", "stream": True}, True, 0, 1, 1, 0)
                    with pytest.raises(ModelHTTPFault) as caught:
                        await up.complete(call)
                    assert call.upstream_seconds is not None and call.upstream_seconds > 0
                    faults.append(caught.value)
        return faults

    refused, missing = anyio.run(main)
    assert (refused.status, refused.headers) == (429, {"retry-after": "7"})
    assert str(refused).startswith("slow down, Bearer ") and UPSTREAM_KEY not in str(refused)
    assert (missing.status, str(missing)) == (404, "no model m")


def _forwarded_once(endpoint: str) -> TrialRecord:
    """One trial of openai-naive (no SDK retries: one request) forwarded to ``endpoint``."""
    config = UpstreamConfig(endpoint=endpoint)
    [record] = run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=OpenAIAgent(resilient=False, upstream=config),
            agent_name="forwarded",
            trials=1,
            seed=3,
            references=False,
        )
    ).records
    return record


def test_an_unreachable_model_endpoint_is_a_harness_error_not_the_agents() -> None:
    """A real closed port on 127.0.0.1: the connection is refused. The infrastructure failed,
    so the trial is not evaluable (cause upstream_error), never the agent's failure; the agent
    is answered as by a gateway (502), and the model step says what happened."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # closed: nothing listens there now
    record = _forwarded_once(f"http://127.0.0.1:{port}/v1")
    assert (record.status, record.root_cause) == ("not_evaluable", "upstream_error")
    assert record.error is not None and f"127.0.0.1:{port}" in record.error
    [step] = model_steps(record)
    assert (step.result_class, info(step)["status"]) == ("harness_error", 502)


def test_an_upstream_200_that_is_not_json_is_a_harness_error() -> None:
    """A proxy's HTML page with status 200 where a completion should be: the endpoint broke."""

    async def page(request: Request) -> Response:
        return Response("<html>gateway says hi</html>", media_type="text/html")

    async def main() -> TrialRecord:
        app = Starlette(routes=[Route("/v1/chat/completions", page, methods=["POST"])])
        async with serve_asgi(app) as url:
            return await anyio.to_thread.run_sync(_forwarded_once, f"{url}/v1")

    record = anyio.run(main)
    assert (record.status, record.root_cause) == ("not_evaluable", "upstream_error")
    assert record.error is not None and "gateway says hi" in record.error


# As an API may write it: its own spacing and key order, UTF-8 text (not \\u escapes).
VERBATIM = (
    '{\n  "id": "chatcmpl-raw", "object": "chat.completion", "created": 0, "model": "m",\n'
    '  "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",'
    ' "content": "caf\u00e9 \u200b ok"}}],\n'
    '  "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}\n}'
).encode()


def test_a_forwarded_answer_no_plugin_touched_reaches_the_agent_byte_for_byte() -> None:
    """With no plugin on the model channel the upstream's answer is written as it came (not a
    re-encoding of its parse: no \\u escapes, the API's own spacing); it is still read for
    the step's record (tokens, finish reason)."""

    async def upstream(request: Request) -> Response:
        await request.body()
        return Response(VERBATIM, media_type="application/json")

    seen: dict[str, bytes] = {}

    async def body(episode: Episode) -> str:
        app = Starlette(routes=[Route("/v1/chat/completions", upstream, methods=["POST"])])
        async with serve_asgi(app) as url:
            config = UpstreamConfig(endpoint=f"{url}/v1")
            async with trial_endpoint(episode, config) as endpoint, httpx.AsyncClient() as http:
                answer = await http.post(
                    f"{endpoint.base_url}/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                    headers={"Authorization": f"Bearer {endpoint.api_key}"},
                )
                seen["body"] = answer.content
        return "probed"

    record = probe_trial(body)
    assert seen["body"] == VERBATIM
    [step] = model_steps(record)
    assert (info(step)["input_tokens"], info(step)["finish_reason"]) == (5, "stop")
