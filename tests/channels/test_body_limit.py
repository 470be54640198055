"""Bounded requests: every server chaoseval runs refuses a body over the run's limit with a 413
in its own API's shape, records it in the trial as the agent's oversized request, and never
holds the body in memory while refusing it.

Real clients over real sockets: the openai and anthropic SDKs on the model channel, httpx on
the MCP endpoint, the HTTP tools and the page server.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
from model_support import probe_trial
from servers_support import all_servers
from typer.testing import CliRunner

from chaoseval.channels.limits import OVERSIZED
from chaoseval.cli.app import app
from chaoseval.model.records import TrialRecord
from chaoseval.seams.agent import Episode
from chaoseval.store.journal import read_journal

LIMIT = 64 << 10  # bytes: the run's --max-request-size
BIG = "x" * (LIMIT + 1)  # a JSON string that puts any request over it
STREAMED = 8 << 20  # bytes sent in chunks at one server: far over the limit


def _run(body: Any, scenario: str) -> TrialRecord:
    return probe_trial(body, scenario, request_limit=LIMIT)


async def _chunks() -> AsyncIterator[bytes]:
    chunk = b"y" * (1 << 16)
    for _ in range(STREAMED // len(chunk)):
        yield chunk


async def _probe(episode: Episode, seen: dict[str, Any]) -> str:
    async with AsyncExitStack() as stack:
        on = await stack.enter_async_context(all_servers(episode))
        urls, tools, model, page = on.hub, on.tools, on.model, on.page
        oai = openai.AsyncOpenAI(base_url=model.base_url, api_key=model.api_key, max_retries=0)
        ant = anthropic.AsyncAnthropic(
            base_url=model.anthropic_base_url, api_key=model.api_key, max_retries=0
        )
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=60))
        async with oai, ant:
            try:
                await oai.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": BIG}]
                )
            except openai.APIStatusError as exc:
                seen["openai"] = (exc.status_code, exc.body)
            try:
                await ant.messages.create(
                    model="m", max_tokens=10, messages=[{"role": "user", "content": BIG}]
                )
            except anthropic.APIStatusError as exc:
                seen["anthropic"] = (exc.status_code, exc.body)
        mcp_request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": BIG}}
        headers = {"accept": "application/json, text/event-stream"}
        answers = {
            "mcp": await http.post(urls.mcp, json=mcp_request, headers=headers),
            "hub tools": await http.post(f"{urls.tools}/tools/lookup_order", json={"x": BIG}),
            "tools": await http.post(f"{tools}/tools/lookup_order", json={"x": BIG}),
            "page": await http.post(f"{page}click", json={"element_id": BIG}),
        }
        for name, response in answers.items():
            seen[name] = (response.status_code, response.json())
        # 8 MiB in chunks (no Content-Length): refused after the limit, and never held.
        tracemalloc.start()
        response = await http.post(f"{urls.tools}/tools/lookup_order", content=_chunks())
        seen["streamed peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        seen["streamed"] = response.status_code
        # Within the limit, everything works as before.
        ok = await http.post(f"{page}click", json={"element_id": "nothing-here"})
        seen["within"] = ok.status_code
    return "probed"


def test_every_server_refuses_an_oversized_body_in_its_own_shape_and_the_trial_records_it() -> None:
    seen: dict[str, Any] = {}

    async def body(episode: Episode) -> str:
        return await _probe(episode, seen)

    record = _run(body, "ui-checkout")
    assert record.status != "not_evaluable", record.error  # the agent's doing, not chaoseval's

    status, error = seen["openai"]
    assert status == 413 and error["type"] == "invalid_request_error"
    assert error["code"] == "request_too_large" and str(LIMIT) in error["message"]
    status, error = seen["anthropic"]
    assert status == 413 and error["type"] == "error"
    assert error["error"]["type"] == "request_too_large"
    status, error = seen["mcp"]
    assert status == 413 and error["jsonrpc"] == "2.0" and error["error"]["code"] == -32600
    for name in ("hub tools", "tools"):
        status, error = seen[name]
        assert status == 413 and error["kind"] == "request_too_large", name
    status, error = seen["page"]
    assert status == 413 and error["ok"] is False and str(LIMIT) in error["error"]
    assert seen["streamed"] == 413
    assert seen["streamed peak"] < STREAMED // 4, seen["streamed peak"]
    assert seen["within"] == 200

    notes = [s for s in record.trajectory.steps if s.kind == "note" and s.tool == OVERSIZED]
    channels = [s.args["channel"] for s in notes if s.args]
    assert channels == ["model", "model", "mcp", "tools", "tools", "page", "tools"]
    for step in notes:
        assert step.result_class == "http_error" and step.result["status"] == 413
        assert step.result["limit"] == LIMIT and step.result["bytes"] > LIMIT
    assert notes[-1].result["bytes"] > LIMIT * 4  # the streamed body was read past the limit
    json.dumps(record.model_dump(mode="json"))  # the record stays a journal line


AGENT = """\
import json, os, urllib.error, urllib.request
url = os.environ["CHAOSEVAL_TOOLS_URL"] + "/tools/lookup_order"
body = json.dumps({"order_id": "x" * 40000}).encode()
request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
try:
    urllib.request.urlopen(request)
except urllib.error.HTTPError as exc:
    print(json.dumps({"answer": f"{exc.code} {json.load(exc)['kind']}"}))
"""


def test_the_limit_is_a_run_option_from_flag_or_settings_file(tmp_path: Path) -> None:
    """--max-request-size, else max_request_size in the settings, reaches an exec: agent's
    trial through the process executor; a body within the limit reaches the tool."""
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "chaoseval.toml").write_text('max_request_size = "32K"\n')
    args = ["run", "--agent", f"exec:{sys.executable} agent.py", "-s", "vending-refund-log-down",
            "--trials", "1", "--no-report", "--no-progress"]  # fmt: skip
    runner = CliRunner()
    answers = {}
    for name, extra in [("file", []), ("flag", ["--max-request-size", "64K"])]:
        with contextlib.chdir(tmp_path):
            res = runner.invoke(app, [*args, "--journal", f"{name}.jsonl", *extra])
        assert res.exit_code == 0, res.output
        [record] = read_journal(tmp_path / f"{name}.jsonl").records
        notes = [s for s in record.trajectory.steps if s.tool == OVERSIZED]
        answers[name] = (record.answer, [s.result["limit"] for s in notes])
    assert answers == {
        "file": ("413 request_too_large", [32 << 10]),
        "flag": ("422 tool_error", []),  # within the flag's limit: the tool answered
    }
    with contextlib.chdir(tmp_path):
        res = runner.invoke(app, [*args, "--max-request-size", "lots"])
    assert res.exit_code != 0 and "--max-request-size 'lots'" in res.output
    # The limit is the run's: replay serves the trial under it (it used the default and
    # the tool answered: "did not reproduce"), and a resume under another limit is refused.
    with contextlib.chdir(tmp_path):
        res = runner.invoke(app, ["replay", "file.jsonl", "vending-refund-log-down/clean/0"])
    assert res.exit_code == 0 and "reproduced exactly" in res.output, res.output
    with contextlib.chdir(tmp_path):
        more = ["--journal", "file.jsonl", "--resume", "--trials", "2"]
        res = runner.invoke(app, [*args, *more, "--max-request-size", "64K"])
    said = "--max-request-size: the journal has 32768, this run 65536"
    assert res.exit_code != 0 and said in res.output, res.output
