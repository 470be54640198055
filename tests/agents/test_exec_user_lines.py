"""The exec: line protocol (``CHAOSEVAL_USER=lines``, chaoseval.agents.userlines): a small
Python agent talks with conv-vending-refund's user on its stdin and stdout, real processes and
real sockets on 127.0.0.1. It passes when it converses; one that exits mid-conversation is its
own crash; one that never reads its replies does not hold the trial up."""

from __future__ import annotations

from pathlib import Path

from chaoseval.agents.process import ProcessAgent
from chaoseval.agents.userlines import PENDING, UserLines
from tests.agents.test_exec_agents import CRASH_TIMEOUT, run_exec, script

SCENARIO = "conv-vending-refund"

# The reference solution, written as an agent any language could be: its tools over HTTP
# (urllib), the user over the line protocol.
TALKER = r"""
import json, os, re, sys, urllib.request

first = json.loads(sys.stdin.readline())
assert first["user"] is True and "Customer:" in first["instruction"], first
base = os.environ["CHAOSEVAL_TOOLS_URL"]
names = [t["name"] for t in json.load(urllib.request.urlopen(base + "/tools"))]
assert "ask_user" not in names, names  # on the line protocol the user is on stdin/stdout

def tool(name, **args):
    req = urllib.request.Request(base + "/tools/" + name, json.dumps(args).encode(),
                                 {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))

def say(text):
    print(json.dumps({"to_user": text}), flush=True)
    turn = json.loads(sys.stdin.readline())
    print("heard", json.dumps(turn), file=sys.stderr, flush=True)
    return turn

print("a plain line, left as output", flush=True)
turn = say("Could you tell me your order number?")
order_id = re.search(r"ORD-\d+", turn["from_user"]).group(0)
if EXIT_AFTER_FIRST_TURN:
    sys.exit(4)
order = tool("lookup_order", order_id=order_id)
log = tool("read_dispense_log", order_id=order_id)
amount = order["amount"]
turn = say(f"The log shows nothing dropped. Shall I refund {amount:.2f} for {order_id}?")
assert turn["ended"] is False and turn["from_user"].startswith("Yes"), turn
refund = tool("issue_refund", order_id=order_id, amount=amount)
print(json.dumps({"answer": f"Refunded {amount:.2f} for {order_id} ({refund['refund_id']})."}))
"""


def talker(tmp_path: Path, exit_early: bool = False) -> str:
    body = f"EXIT_AFTER_FIRST_TURN = {exit_early}\n" + TALKER
    return "CHAOSEVAL_USER=lines " + script(tmp_path, "talker", body)


def turns(record) -> list:
    return [s for s in record.trajectory.steps if s.kind == "user"]


def test_an_agent_on_the_line_protocol_converses_and_passes(tmp_path: Path) -> None:
    [record] = run_exec(tmp_path, talker(tmp_path), scenario=SCENARIO)
    assert record.status == "passed", (record.error, record.root_cause)
    said = turns(record)
    assert [s.args["text"][:30] for s in said] == [
        "Could you tell me your order n",
        "The log shows nothing dropped.",
    ]
    assert said[0].result == "My order number is ORD-1042." and said[1].data.agreed
    refund = next(s for s in record.trajectory.tool_steps() if s.tool == "issue_refund")
    assert refund.index > said[1].index
    stdout = tmp_path / next(a.path for a in record.artifacts if a.name == "stdout.txt")
    assert "a plain line, left as output" in stdout.read_text()


def test_the_variable_is_inherited_from_where_chaoseval_runs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CHAOSEVAL_USER", "lines")
    command = talker(tmp_path).removeprefix("CHAOSEVAL_USER=lines ")
    [record] = run_exec(tmp_path, command, scenario=SCENARIO)
    assert record.status == "passed", (record.error, record.root_cause)
    assert len(turns(record)) == 2


def test_an_agent_that_exits_mid_conversation_is_its_own_crash(tmp_path: Path) -> None:
    [record] = run_exec(
        tmp_path, talker(tmp_path, exit_early=True), scenario=SCENARIO, timeout=CRASH_TIMEOUT
    )
    assert record.status == "failed" and record.root_cause == "crash"
    assert "code 4" in (record.error or "")
    assert len(turns(record)) == 1


def test_without_the_variable_stdin_closes_and_ask_user_is_listed(tmp_path: Path) -> None:
    body = (
        "import json, os, sys, urllib.request\n"
        "task = sys.stdin.read()\n"  # reads to EOF: stdin is closed after the instruction
        "names = [t['name'] for t in json.load(urllib.request.urlopen("
        "os.environ['CHAOSEVAL_TOOLS_URL'] + '/tools'))]\n"
        "print(json.dumps({'answer': ' '.join(names) + ' | ' + task.strip()[-21:]}))\n"
    )
    [record] = run_exec(tmp_path, script(tmp_path, "plain", body), scenario=SCENARIO)
    names, task_end = (record.answer or "").split(" | ")
    assert "ask_user" in names.split() and task_end == "I want my money back."


def test_an_agent_that_leaves_without_reading_its_reply_fails_on_its_own(tmp_path: Path) -> None:
    body = (
        "import json, sys\n"
        "sys.stdin.readline()\n"
        "print(json.dumps({'to_user': 'What is your order number?'}), flush=True)\n"
        "print(json.dumps({'answer': 'I did not wait for you.'}))\n"
    )
    command = "CHAOSEVAL_USER=lines " + script(tmp_path, "leaver", body)
    [record] = run_exec(tmp_path, command, scenario=SCENARIO)
    assert record.status == "failed" and record.answer == "I did not wait for you."
    assert len(turns(record)) <= 1  # said, or not yet read when the agent was gone


def test_leading_assignments_set_the_agents_variables() -> None:
    agent = ProcessAgent("CHAOSEVAL_USER=lines X=a=b python3 -c pass")
    assert agent.assigned == {"CHAOSEVAL_USER": "lines", "X": "a=b"}
    assert agent.argv[1:] == ["-c", "pass"]


def test_messages_past_the_pending_ones_are_left_unanswered() -> None:
    """The stdout drain never waits: an agent that writes messages and never reads the
    replies has the ones past PENDING left unanswered."""
    lines = UserLines(None)
    line = b'{"to_user": "hello?"}\n'
    lines.feed(line * (PENDING + 3))
    assert lines.unanswered == 3
    lines.feed(b'{"to_user": "a line over the limit' + b"x" * (70 << 10) + b'"}\nplain\n')
    assert lines.unanswered == 3  # neither is a message (nor does either wait)
