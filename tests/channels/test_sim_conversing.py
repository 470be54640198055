"""chaoseval-sim converses through the agent (chaoseval.channels.model.simuser): with the
``ask_user`` tool when the request offers it, else in plain text a line-protocol agent relays;
the user's replies read back from the conversation, in order, the same on the same seed.

The agents are real processes with the real ``openai`` (and ``mcp``) SDKs: the bundled
example over MCP, and a small chat loop on the line protocol."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from chaoseval.agents.process import ProcessAgent
from chaoseval.channels.model.simuser import UserAction, reply_for
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.records import TrialRecord
from chaoseval.store.journal import read_journal

pytestmark = pytest.mark.slow  # a process per trial, each importing openai

SCENARIO = "conv-vending-refund"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_mcp_agent.py"

# A chat loop on the OpenAI SDK and the line protocol: the model's text that is not its JSON
# answer goes to the user, and the user's reply comes back as the next user message.
LINE_AGENT = r"""
import json, os, sys
import openai

first = json.loads(sys.stdin.readline())
llm = openai.OpenAI()
messages = [{"role": "system", "content": "Reply with JSON {\"answer\": ...} when done."},
            {"role": "user", "content": first["instruction"]}]
tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
          "parameters": t["parameters"]}} for t in json.load(__import__("urllib.request").request
          .urlopen(os.environ["CHAOSEVAL_TOOLS_URL"] + "/tools"))]

def call(name, args):
    import urllib.request
    req = urllib.request.Request(os.environ["CHAOSEVAL_TOOLS_URL"] + "/tools/" + name,
                                 json.dumps(args).encode(), {"Content-Type": "application/json"})
    return urllib.request.urlopen(req).read().decode()

for _ in range(30):
    message = llm.chat.completions.create(model=os.environ["CHAOSEVAL_MODEL"],
                                          messages=messages, tools=tools).choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    if message.tool_calls:
        for c in message.tool_calls:
            result = call(c.function.name, json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
        continue
    text = message.content or ""
    try:
        done = "answer" in json.loads(text)
    except ValueError:
        done = False
    if done:
        print(text)
        break
    print(json.dumps({"to_user": text}), flush=True)
    turn = json.loads(sys.stdin.readline())
    messages.append({"role": "user", "content": turn["from_user"] if not turn["ended"]
                     else json.dumps(turn)})
"""


def run_agent(tmp_path: Path, command: str, name: str) -> list[TrialRecord]:
    journal = tmp_path / f"{name}.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=ProcessAgent(command, grace=0.5),
            agent_name="exec:" + name,
            trials=2,
            seed=3,
            journal=journal,
            wall_timeout=60,
        )
    )
    return sorted(read_journal(journal).records, key=lambda r: r.index)


def conversation(record: TrialRecord) -> list[tuple[str, str | None]]:
    return [(s.args["text"], s.result) for s in record.trajectory.steps if s.kind == "user"]


def asked_tools(record: TrialRecord) -> set[str]:
    return {
        name
        for s in record.trajectory.steps
        if s.kind == "model" and isinstance(s.result, dict)
        for name in s.result.get("tool_calls") or []
    }


def test_over_mcp_the_sim_talks_to_the_user_through_ask_user(tmp_path: Path) -> None:
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(EXAMPLE))}"
    first = run_agent(tmp_path, command, "a")
    assert [r.status for r in first] == ["passed", "passed"], [r.error for r in first]
    assert all("ask_user" in asked_tools(r) for r in first)
    talk = conversation(first[0])
    assert len(talk) >= 2 and talk[-1][0].startswith("The log shows nothing dropped")
    assert talk[-1][1] is not None and talk[-1][1].startswith("Yes")
    again = run_agent(tmp_path, command, "b")
    assert [conversation(r) for r in again] == [conversation(r) for r in first]  # seeded


def test_on_the_line_protocol_the_sim_talks_in_plain_text(tmp_path: Path) -> None:
    path = tmp_path / "line_agent.py"
    path.write_text(LINE_AGENT)
    command = f"CHAOSEVAL_USER=lines {shlex.quote(sys.executable)} {shlex.quote(str(path))}"
    records = run_agent(tmp_path, command, "lines")
    assert [r.status for r in records] == ["passed", "passed"], [r.error for r in records]
    assert not any("ask_user" in asked_tools(r) for r in records)
    talk = conversation(records[0])
    assert talk[-1][0].startswith("The log shows nothing dropped") and talk[-1][1]


def test_replies_are_read_as_each_client_relays_them() -> None:
    said = UserAction("call_001", "What is your order number?", users_before=1)
    asked = {"role": "assistant", "content": said.text}
    task = {"role": "user", "content": "the task"}
    assert reply_for([task, asked], said) is None  # not relayed yet
    relayed = [task, asked, {"role": "user", "content": "ORD-1042"}]
    assert reply_for(relayed, said) == ("ORD-1042", False)
    gone = json.dumps({"from_user": None, "ended": True})
    assert reply_for([task, asked, {"role": "user", "content": gone}], said) == (None, True)
    # An agent that rewrote the message: the user messages past the ones the request held.
    reworded = [task, {"role": "assistant", "content": "Order number?"}, relayed[-1]]
    assert reply_for(reworded, said) == ("ORD-1042", False)
    tool = UserAction("call_002", "Shall I refund 2.75?", tool=True)
    result = json.dumps({"reply": "Yes, go ahead.", "ended": False})
    calls = [{"id": "call_002", "type": "function", "function": {"name": "ask_user"}}]
    made = {"role": "assistant", "content": None, "tool_calls": calls}
    assert reply_for([task, made], tool) is None
    back = {"role": "tool", "tool_call_id": "call_002", "content": result}
    assert reply_for([task, made, back], tool) == ("Yes, go ahead.", False)
