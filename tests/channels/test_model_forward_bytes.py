"""What a ``--model-endpoint`` upstream receives: the agent's own request bytes where nothing
could have changed the request (the configured sampling settings it sent none of added at
their end), a fresh encoding wherever something could (a plugin on the model channel, a stream
asked for, an escape to write as the character, a setting sent as null). Over real sockets:
an httpx client sending exact bytes, the real server, a real upstream app keeping the bytes
it got."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from model_support import SCENARIO, Probe, info, model_steps, probe_trial
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from chaoseval.channels.asgi import serve_asgi
from chaoseval.channels.model.resent import ConversationReader
from chaoseval.channels.model.session import UpstreamConfig, trial_endpoint
from chaoseval.channels.model.wire import fingerprint
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings
from chaoseval.seams.agent import Episode

ANSWER = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}  # fmt: skip

# As an SDK may write a body: its own spacing, UTF-8 characters (a zero-width space too).
OWN = '{"model":"m",  "messages":[{"role":"user","content":"caf\u00e9 \u200b hi"}]}\n'.encode()
WITH_TEMPERATURE = b'{"model":"m","temperature":0.1,"messages":[{"role":"user","content":"x"}]}'
STREAM = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}'
ESCAPED = b'{"model":"m","messages":[{"role":"user","content":"a\\u200bb"}]}'
NULL_TEMPERATURE = b'{"model":"m","temperature":null,"messages":[{"role":"user","content":"x"}]}'
TOOLS = (b'{"model":"m","tools":[{"type":"function","function":{"name":"a"}},{"type":"function",'
         b'"function":{"name":"b"}}],"messages":[{"role":"user","content":"x"},{"role":"user",'
         b'"content":"y"}],"temperature":0.5}')  # fmt: skip


def _send_all(
    bodies: list[bytes], got: list[bytes], before: Callable[[Episode, int], None] | None = None
) -> Any:
    """A probe sending each body as it is to its trial's channel, forwarded to an upstream
    that keeps each request's bytes in ``got`` (``before``: called with the body's index
    before each is sent)."""

    async def chat(request: Request) -> JSONResponse:
        got.append(await request.body())
        return JSONResponse(ANSWER)

    async def body(episode: Episode) -> str:
        app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
        async with serve_asgi(app) as url:
            config = UpstreamConfig(endpoint=f"{url}/v1")
            async with trial_endpoint(episode, config) as endpoint, httpx.AsyncClient() as http:
                for i, raw in enumerate(bodies):
                    if before is not None:
                        before(episode, i)
                    answer = await http.post(
                        f"{endpoint.base_url}/chat/completions",
                        content=raw,
                        headers={
                            "Authorization": f"Bearer {endpoint.api_key}",
                            "Content-Type": "application/json",
                        },
                    )
                    assert answer.status_code == 200, answer.text
        return "probed"

    return body


def test_the_agents_own_bytes_reach_the_upstream_where_nothing_could_change_them() -> None:
    got: list[bytes] = []
    bodies = [OWN, WITH_TEMPERATURE, STREAM, ESCAPED, NULL_TEMPERATURE, TOOLS]
    record = probe_trial(_send_all(bodies, got))  # temperature 0.7 configured, no seed
    assert record.status != "not_evaluable", record.error
    own, with_temperature, stream, escaped, null_temperature, tools = got
    # The agent's bytes, the configured temperature it sent none of added at the end.
    assert own == OWN.rstrip()[:-1] + b', "temperature": 0.7}'
    assert with_temperature == WITH_TEMPERATURE  # nothing to add: as it came
    assert tools == TOOLS
    # A stream asked for: the upstream is asked for a whole completion, the body written anew.
    assert json.loads(stream) == {
        "model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.7,
    }  # fmt: skip
    assert b'"stream"' not in stream
    # An escape reaches the upstream as the character itself.
    assert "a\u200bb".encode() in escaped and b"\\u" not in escaped
    # A setting sent as null is replaced where it was: one temperature, the configured one.
    assert json.loads(null_temperature)["temperature"] == 0.7
    assert null_temperature.count(b'"temperature"') == 1
    # The record is the request's as it came, whatever bytes went upstream (and however
    # far the channel read it: wire.read_top where its bytes were passed on as they came).
    steps = model_steps(record)
    assert [info(s)["request_hash"] for s in steps] == [fingerprint(raw) for raw in bodies]
    assert [info(s)["temperature"] for s in steps] == [0.7, 0.1, 0.7, 0.7, 0.7, 0.5]
    assert [info(s)["sent_temperature"] for s in steps] == [None, 0.1, None, None, None, 0.5]
    assert [(info(s)["messages"], info(s)["tools"], info(s)["model"]) for s in steps] == [
        (1, 0, "m")
    ] * 5 + [(2, 2, "m")]


def test_with_a_plugin_on_the_model_channel_the_upstream_gets_the_body_as_it_left_the_plugins() -> (
    None
):
    got: list[bytes] = []
    records = run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=Probe(_send_all([OWN], got)),
            agent_name="probe",
            cells=parse_cells(["sampling:seed=9"]),
            trials=1,
            seed=3,
            references=False,
            model=ModelSettings(temperature=0.2),
        )
    ).records
    assert [r.status != "not_evaluable" for r in records] == [True, True], records
    clean, sampled = sorted(got, key=lambda raw: b'"seed"' in raw)
    assert clean == OWN.rstrip()[:-1] + b', "temperature": 0.2}'  # no plugin: its bytes
    # The plugin's seed in the body it forwards: the body written anew, as json writes it.
    expected = {**json.loads(OWN), "temperature": 0.2, "seed": 9}
    assert sampled == json.dumps(expected, ensure_ascii=False).encode()


def test_a_conversation_forwarded_over_the_wire_is_read_where_it_grew(monkeypatch: Any) -> None:
    """An agent's turns, each resending the last (over 2 kB: its tools' schemas), forwarded
    as they came; the channel reads each only where it grew (resent.ConversationReader: a
    whole read for the first only) and records what the whole read would."""
    whole: list[bytes] = []
    fresh = ConversationReader._fresh

    def counted(self: ConversationReader, raw: bytes) -> Any:
        whole.append(raw)
        return fresh(self, raw)

    monkeypatch.setattr(ConversationReader, "_fresh", counted)
    tools = [{"type": "function", "function": {"name": f"t{i}", "description": "d " * 500}}
             for i in range(3)]  # fmt: skip
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    bodies = []
    for turn in range(4):
        messages.append({"role": "user", "content": f"question {turn} \u200b"})
        extra = {"max_tokens": 50} if turn == 3 else {}  # a member after the messages changes
        bodies.append(json.dumps({"model": "m", "messages": messages, "tools": tools, **extra},
                                 ensure_ascii=False).encode())  # fmt: skip
        messages.append({"role": "assistant", "content": f"answer {turn}"})
    bodies.insert(2, bodies[1])  # the same request again
    got: list[bytes] = []
    record = probe_trial(_send_all(bodies, got))
    assert record.status != "not_evaluable", record.error
    assert got == [raw[:-1] + b', "temperature": 0.7}' for raw in bodies]
    steps = model_steps(record)
    assert [info(s)["request_hash"] for s in steps] == [fingerprint(raw) for raw in bodies]
    assert [(info(s)["messages"], info(s)["tools"]) for s in steps] == [
        (2, 3), (4, 3), (4, 3), (6, 3), (8, 3)
    ]  # fmt: skip
    assert whole == bodies[:1]


def test_the_settings_added_to_the_agents_bytes_follow_the_configured_values() -> None:
    """Both configured settings added where the agent sent neither, only the one it did not
    send otherwise; and where the trial's settings change between requests (the channel
    writes what it adds once per value), the new value reaches the upstream."""
    got: list[bytes] = []

    def before(episode: Episode, i: int) -> None:
        if i == 2:  # (as a plugin's setup might, had it run later)
            assert episode.model is not None
            episode.model.temperature = 0.9

    records = run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=Probe(_send_all([OWN, WITH_TEMPERATURE, OWN], got, before)),
            agent_name="probe",
            trials=1,
            seed=3,
            references=False,
            model=ModelSettings(temperature=0.2, seed=5),
        )
    ).records
    assert [r.status for r in records] != ["not_evaluable"], records
    head = OWN.rstrip()[:-1]
    assert got == [
        head + b', "temperature": 0.2, "seed": 5}',
        WITH_TEMPERATURE[:-1] + b', "seed": 5}',
        head + b', "temperature": 0.9, "seed": 5}',
    ]
