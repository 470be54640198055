"""One trial's output never aborts the run (issue 39, item 2): exec: agents that send a lone
surrogate or JSON nested past every parser's limit, through their answer line, the HTTP
tools, MCP and the model channel, in a real ``chaoseval run``. Each such trial is recorded
with a note step saying what was done; the others run and are written; ``report`` reads the
journal and ``--resume`` has nothing left to do."""

from __future__ import annotations

import json
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from chaoseval.agents.output import Capture, parse_answer
from chaoseval.cli.app import app
from chaoseval.model import untrusted
from chaoseval.model.records import ModelSettings, TrialRecord
from chaoseval.store.journal import encode_record, read_journal
from tests.agents.test_exec_agents import SCENARIO

# Trial i does KINDS[i]; the last is a plain agent. Each prints what it was answered on
# stderr (an artifact), then its answer.
KINDS = [
    "answer_surrogate", "answer_deep", "tools_surrogate", "tools_deep_260", "tools_deep",
    "mcp_deep", "model_surrogate", "model_deep", "plain",
]  # fmt: skip
DEEP = 200_000
AGENT = f"""
import json, os, sys, urllib.error, urllib.request
KINDS = {KINDS!r}
kind = KINDS[int(os.environ["CHAOSEVAL_TRIAL_ID"].rsplit("/", 1)[1])]

def post(url, body, **headers):
    headers.setdefault("Content-Type", "application/json")
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, answer.headers, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()

def nested(n):
    return b"[" * n + b"]" * n

tools = os.environ["CHAOSEVAL_TOOLS_URL"] + "/tools/lookup_order"
model = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
key = {{"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}}
got = None
if kind == "answer_surrogate":
    print('{{"answer": "bad \\\\ud800 answer"}}')
    sys.exit(0)
if kind == "answer_deep":
    print('{{"answer": ' + "[" * {DEEP} + "]" * {DEEP} + "}}")
    sys.exit(0)
if kind == "tools_surrogate":
    got = post(tools, b'{{"order_id": "ORD-\\\\ud800"}}')
if kind == "tools_deep_260":
    got = post(tools, b'{{"order_id": ' + nested(260) + b"}}")
if kind == "tools_deep":
    got = post(tools, b'{{"order_id": ' + nested({DEEP}) + b"}}")
if kind == "mcp_deep":
    mcp = os.environ["CHAOSEVAL_MCP_URL"]
    accept = "application/json, text/event-stream"
    hello = {{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{
        "protocolVersion": "2025-06-18", "capabilities": {{}},
        "clientInfo": {{"name": "hostile", "version": "1"}}}}}}
    _, headers, _ = post(mcp, json.dumps(hello).encode(), Accept=accept)
    session = {{"Accept": accept, "mcp-session-id": headers["mcp-session-id"]}}
    post(mcp, b'{{"jsonrpc": "2.0", "method": "notifications/initialized"}}', **session)
    call = (b'{{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {{"name": '
            b'"lookup_order", "arguments": {{"order_id": ' + nested(198) + b"}}}}}}")
    got = post(mcp, call, **session)
if kind == "model_surrogate":
    got = post(model, b'{{"model": "sim-\\\\ud800", "messages": [{{"role": "user", '
                      b'"content": "hi"}}]}}', **key)
if kind == "model_deep":
    got = post(model, b'{{"model": "sim-1", "messages": ' + nested({DEEP}) + b"}}", **key)
if got is not None:
    print(json.dumps({{"kind": kind, "status": got[0], "body": got[2][:300]}}), file=sys.stderr)
print(json.dumps({{"answer": "done: " + kind}}))
"""


def _run(args: list[str]):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output, result.output
    return result


def _told(tmp_path: Path, record: TrialRecord) -> dict[str, object]:
    """What the agent printed it was answered (its stderr artifact)."""
    stderr = next(tmp_path / a.path for a in record.artifacts if a.name == "stderr.txt")
    return json.loads(stderr.read_text().strip().splitlines()[-1])


def test_hostile_output_is_recorded_and_the_run_goes_on(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    command = f"exec:{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    journal = tmp_path / "j.jsonl"
    flags = ["--agent", command, "-s", SCENARIO, "-n", str(len(KINDS)), "-j", "3",
             "--journal", str(journal), "--trial-timeout", "60", "--no-progress"]  # fmt: skip
    _run(["run", *flags, "--no-report"])
    records = {KINDS[r.index]: r for r in read_journal(journal).records}
    assert sorted(records) == sorted(KINDS)  # every trial is in the journal
    assert all(r.status != "not_evaluable" and r.root_cause != "crash" for r in records.values())

    def notes(kind: str) -> list[tuple[str | None, str]]:
        steps = records[kind].trajectory.steps
        return [(s.tool, s.error or "") for s in steps if s.kind == "note"]

    assert records["plain"].answer == "done: plain" and notes("plain") == []
    # A lone surrogate is kept as the text of its escape, and the note says where and why.
    assert records["answer_surrogate"].answer == "bad \\ud800 answer"
    [(tool, error)] = notes("answer_surrogate")
    assert tool == untrusted.CLEANED and "lone surrogates" in error and "answer" in error
    [(tool, error)] = notes("tools_surrogate")
    assert tool == untrusted.CLEANED and "trajectory.steps.0.args.order_id" in error
    assert records["tools_surrogate"].trajectory.steps[0].args == {"order_id": "ORD-\\ud800"}
    [(tool, error)] = notes("model_surrogate")
    assert tool == untrusted.CLEANED and ".args.model" in error
    # An answer line too deep for any parser: the whole stdout is the answer, cut, and said.
    [(tool, error)] = notes("answer_deep")
    assert tool == untrusted.CLEANED and "nested deeper than the parser takes" in error
    assert records["answer_deep"].answer.startswith('{"answer": [[[')
    assert "cut by chaoseval" in records["answer_deep"].answer
    # A body nested too deep: a 400 the agent read, in its API's shape, and a note step.
    for kind in ("tools_deep_260", "tools_deep", "mcp_deep", "model_deep"):
        assert notes(kind) == [(untrusted.DEEP_REQUEST, notes(kind)[0][1])], kind
        told = _told(tmp_path, records[kind])
        assert told["status"] == 400 and "nested deeper than 100 levels" in str(told["body"])

    report = _run(["report", str(journal), "--format", "json"])
    [cell] = json.loads(report.output)["cells"]
    assert cell["trials"] == cell["scored"] == len(KINDS)
    before = journal.read_bytes()
    resumed = _run(["run", *flags, "--resume", "--no-report"])
    assert "wrote 0 trial(s)" in resumed.output
    assert journal.read_bytes() == before


# Any text, lone surrogates included, often: st.text leaves category Cs out whatever its
# alphabet says (0 of 200 drawn held one), so the characters are joined here.
ANY_TEXT = st.lists(
    st.characters(codec=None, exclude_categories=()) | st.characters(categories=["Cs"]),
    max_size=40,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(ANY_TEXT, ANY_TEXT)
def test_any_text_an_agent_sends_is_recorded_and_its_line_reads_again(answer, arg):
    """Whatever JSON-able text an exec: agent writes, as its answer or a tool argument (and a
    key), becomes a record whose journal line reads back, with its text as sent or, where
    UTF-8 cannot hold it, as the text of its escapes, and a note saying so."""
    stdout = Capture(1 << 20, 1 << 16, 1 << 20)
    stdout.add(json.dumps({"answer": answer, "data": {"x": arg}}).encode() + b"\n")
    record = TrialRecord(
        run_id="r", trial_id="s/clean/0", scenario="s", cell="clean", index=0, seed=1,
        world_seed=1, agent="exec:x", model=ModelSettings(), status="failed",
        answer=parse_answer(stdout).answer, started_at=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    record.trajectory.add_step("tool", tool="t", args={arg: [arg, {"k": arg}]}, error=arg)
    line = encode_record(record)
    again = TrialRecord.model_validate_json(line)
    assert TrialRecord.model_validate(json.loads(line)) == again
    # What the JSON means (an escaped surrogate pair is one character), lone ones escaped.
    assert again.answer == untrusted.escape(json.loads(json.dumps(answer)))
    escaped = untrusted.escape(arg)
    assert again.trajectory.steps[0].args == {escaped: [escaped, {"k": escaped}]}
    # (The answer was escaped as it was read: its note goes to a trial, the e2e test's.)
    noted = [s for s in again.trajectory.steps if s.tool == untrusted.CLEANED]
    assert bool(noted) == (escaped != arg)


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


JSON = st.recursive(
    st.none() | st.integers() | st.text("[]{}\"\\ab", max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(JSON, st.integers(0, 8))
def test_deeper_measures_nesting_as_json_has_it(value, limit):
    """Brackets inside strings (escaped quotes too) never count; every level outside does."""
    raw = json.dumps(value).encode()
    assert untrusted.deeper(raw, limit) == (_depth(value) > limit)
