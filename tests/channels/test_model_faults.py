"""Model-channel faults seen by the real OpenAI SDK over 127.0.0.1, and how they are recorded."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from model_support import Probe, info, model_steps, run_agent

from chaoseval.agents.openai_agents import OpenAIAgent
from chaoseval.channels.model.calls import ModelCallPerturbation
from chaoseval.channels.model.session import trial_endpoint
from chaoseval.channels.model.wire import is_json
from chaoseval.model.records import TrialRecord
from chaoseval.seams.agent import Episode
from chaoseval.seams.perturbation import CallNext, CommonParams, PerturbationContext, perturbation

FAST = "retry_after=0.01,probability=1"  # retry-after-ms: 10, so SDK back-off costs nothing


def probe(
    cell: str,
    *,
    max_retries: int,
    stream: bool = False,
    first_timeout: float = 60.0,
    **request: Any,
) -> tuple[TrialRecord, dict[str, Any]]:
    """One trial whose agent makes one chat request with the real SDK; what it saw.

    The SDK's first attempt has ``first_timeout`` seconds, its retries 60: a hang is cut
    short on the first attempt, while the retry that absorbs it gets the time a loaded
    machine may take to answer (it was one timeout for all: the retry had 0.3 s too)."""
    seen: dict[str, Any] = {}

    async def per_attempt(request: httpx.Request) -> None:
        if request.headers.get("x-stainless-retry-count", "0") == "0":
            request.extensions["timeout"] = httpx.Timeout(first_timeout).as_dict()

    async def body(episode: Episode) -> str:
        async with trial_endpoint(episode) as endpoint:
            client = openai.AsyncOpenAI(
                base_url=endpoint.base_url,
                api_key=endpoint.api_key,
                max_retries=max_retries,
                timeout=60.0,
                http_client=openai.DefaultAsyncHttpxClient(event_hooks={"request": [per_attempt]}),
            )
            tools = [
                {"type": "function", "function": {"name": d["name"], "parameters": d["parameters"]}}
                for d in episode.tools.describe()
            ]
            try:
                await _ask(client, tools, stream, seen, request)
            except openai.APIError as exc:
                seen["error"] = type(exc).__name__
                seen["headers"] = (
                    dict(exc.response.headers) if getattr(exc, "response", None) else {}
                )
            finally:
                await client.close()
        return "probed"

    record = run_agent(Probe(body), cells=[cell], trials=1)[-1]
    assert record.cell != "clean"
    return record, seen


async def _ask(
    client: openai.AsyncOpenAI,
    tools: list[dict[str, Any]],
    stream: bool,
    seen: dict[str, Any],
    extra: dict[str, Any],
) -> None:
    messages = [{"role": "user", "content": "Refund the order."}]
    if not stream:
        done = await client.chat.completions.create(
            model="gpt-test", messages=messages, tools=tools, **extra
        )
        seen["tool_calls"] = [c.function.name for c in done.choices[0].message.tool_calls or []]
        return
    chunks = await client.chat.completions.create(
        model="gpt-test", messages=messages, tools=tools, stream=True, **extra
    )
    seen["arguments"] = ""
    async for chunk in chunks:
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or []:
                seen["arguments"] += call.function.arguments or "" if call.function else ""


def faults(record: TrialRecord) -> list[tuple[str, bool, bool]]:
    return [(f.kind, f.delivered, bool(f.detail.get("absorbed"))) for f in record.trajectory.faults]


def test_sdk_without_retries_sees_the_injected_429() -> None:
    record, seen = probe(f"model_error:modes=429,first_n=1,{FAST}", max_retries=0)
    assert seen["error"] == "RateLimitError"
    assert seen["headers"]["retry-after-ms"] == "10"
    assert faults(record) == [("http_error", True, False)]
    (step,) = model_steps(record)
    assert info(step)["status"] == 429 and info(step)["attempt"] == 1 and step.faults == [0]


def test_sdk_retries_absorb_the_faults_and_the_trajectory_shows_the_attempts() -> None:
    record, seen = probe(f"model_error:modes=429,first_n=2,{FAST}", max_retries=2)
    assert "error" not in seen and seen["tool_calls"]
    steps = model_steps(record)
    assert [info(s)["attempt"] for s in steps] == [1, 2, 3]
    assert [info(s)["status"] for s in steps] == [429, 429, 200]
    assert len({info(s)["request_hash"] for s in steps}) == 1
    assert faults(record) == [("http_error", True, True), ("http_error", True, True)]


def test_the_last_fault_of_an_exhausted_retry_chain_is_delivered() -> None:
    record, seen = probe(f"model_error:modes=[500],first_n=3,{FAST}", max_retries=2)
    assert seen["error"] == "InternalServerError"
    assert faults(record) == [
        ("http_error", True, True),
        ("http_error", True, True),
        ("http_error", True, False),
    ]


def test_x_should_retry_false_stops_the_sdk_retrying() -> None:
    record, seen = probe(f"model_error:modes=503,should_retry=false,{FAST}", max_retries=2)
    assert seen["error"] == "InternalServerError"
    assert len(model_steps(record)) == 1
    assert faults(record) == [("http_error", True, False)]


def test_a_stream_cut_mid_tool_call_is_delivered() -> None:
    record, seen = probe(f"model_error:modes=stream_cut,{FAST}", max_retries=2, stream=True)
    assert seen["error"] == "APIConnectionError"
    assert seen["arguments"] and not is_json(seen["arguments"])  # half a tool call arrived
    assert faults(record) == [("stream_cut", True, False)]
    assert model_steps(record)[0].result_class == "connection_reset"


@pytest.mark.parametrize("mode", ["hang", "reset"])
def test_hang_and_reset_reach_the_client_and_a_retry_absorbs_them(mode: str) -> None:
    cell = f"model_error:modes={mode},first_n=1,{FAST}"
    # Only a hang needs the client to give up: a reset has all the time it takes to arrive.
    first = 0.3 if mode == "hang" else 60.0
    record, seen = probe(cell, max_retries=0, first_timeout=first)
    expected = "APITimeoutError" if mode == "hang" else "APIConnectionError"
    assert seen["error"] == expected
    kind = "timeout" if mode == "hang" else "connection_reset"
    assert faults(record) == [(kind, True, False)]
    record, seen = probe(cell, max_retries=1, first_timeout=first)
    assert "error" not in seen and seen["tool_calls"]
    assert faults(record) == [(kind, True, True)]


def test_context_length_error_is_not_retried() -> None:
    record, seen = probe(f"model_error:modes=context_length,{FAST}", max_retries=2)
    assert seen["error"] == "BadRequestError"
    assert len(model_steps(record)) == 1


def test_sampling_rewrites_the_temperature_and_seed_that_reach_the_upstream() -> None:
    record, seen = probe("sampling:temperature=1.1,seed=5", max_retries=0, temperature=0.2, seed=1)
    assert "error" not in seen
    (step,) = model_steps(record)
    assert (info(step)["temperature"], info(step)["seed"]) == (1.1, 5)
    rewrite = [f for f in record.trajectory.faults if f.step == step.index]
    assert rewrite[0].detail == {
        "temperature": {"from": 0.2, "to": 1.1},
        "seed": {"from": 1, "to": 5},
    }
    assert rewrite[0].delivered


def test_a_client_without_a_retry_header_is_recognised_by_the_repeated_body() -> None:
    """A hand-written client (httpx, no x-stainless-retry-count) that re-sends the same body
    after a 429: the second request is attempt 2 and the 429 was absorbed by its retry."""
    statuses: list[int] = []

    async def body(episode: Episode) -> str:
        async with trial_endpoint(episode) as endpoint:
            request = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
            headers = {"Authorization": f"Bearer {endpoint.api_key}"}
            async with httpx.AsyncClient(base_url=endpoint.base_url, headers=headers) as client:
                for _ in range(2):
                    statuses.append(
                        (await client.post("/chat/completions", json=request)).status_code
                    )
        return "probed"

    cell = f"model_error:modes=429,first_n=1,{FAST}"
    records = run_agent(Probe(body), cells=[cell], trials=1, concurrency=1)
    (record,) = [r for r in records if r.cell != "clean"]
    assert statuses == [200, 200, 429, 200]  # clean runs first
    assert [info(s)["attempt"] for s in model_steps(record)] == [1, 2]
    assert faults(record) == [("http_error", True, True)]


def test_a_hang_the_client_never_gives_up_on_is_delivered_when_the_trial_ends() -> None:
    async def body(episode: Episode) -> str:
        async with trial_endpoint(episode) as endpoint:
            client = openai.AsyncOpenAI(
                base_url=endpoint.base_url, api_key=endpoint.api_key, timeout=60.0
            )
            await client.chat.completions.create(model="m", messages=[])
        return "never"

    cell = "model_error:modes=hang,probability=1"
    records = run_agent(Probe(body), cells=[cell], trials=1, wall_timeout=5.0)
    (record,) = [r for r in records if r.cell != "clean"]
    assert record.root_cause == "timeout"
    assert faults(record) == [("timeout", True, False)]
    assert model_steps(record)[0].result_class == "timeout"


def test_an_agent_re_asking_after_a_malformed_answer_is_not_a_retry() -> None:
    """The SDK sends x-stainless-retry-count 0 on the agent's own repeat of a request: the
    malformed answer it re-asks after was seen by the agent's code, not absorbed."""

    async def body(episode: Episode) -> str:
        async with trial_endpoint(episode) as endpoint:
            client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key)
            request: dict[str, Any] = {
                "model": "m",
                "messages": [{"role": "user", "content": "go"}],
            }
            for _ in range(2):
                await client.chat.completions.create(**request)
            await client.close()
        return "probed"

    cell = "model_malformed:modes=empty_choices,first_n=1,probability=1"
    (record,) = [r for r in run_agent(Probe(body), cells=[cell], trials=1) if r.cell != "clean"]
    assert [info(s)["attempt"] for s in model_steps(record)] == [1, 1]
    assert faults(record) == [("malformed", True, False)]


@perturbation("test-model-raises")
class _BuggyModelPlugin(ModelCallPerturbation[CommonParams]):
    """A model-channel plugin with a bug."""

    Params = CommonParams

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        raise KeyError("model plugin bug")


def test_a_model_plugin_that_raises_makes_the_trial_not_evaluable() -> None:
    """The plugin's bug is the harness's (plugin_error), not the agent's: the agent got a 500
    marked ``X-Chaoseval-Error: harness_error`` and the step records why."""
    [_, buggy] = run_agent(OpenAIAgent(resilient=False), cells=["test-model-raises"], trials=1)
    assert (buggy.status, buggy.root_cause) == ("not_evaluable", "plugin_error")
    assert buggy.error is not None and "model plugin bug" in buggy.error
    [step] = model_steps(buggy)
    assert (step.result_class, info(step)["status"]) == ("harness_error", 500)
