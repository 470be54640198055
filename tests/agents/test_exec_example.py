"""The standalone example agent (``openai`` and ``mcp`` only, no chaoseval) run with ``exec:``:
through MCP and the model channel against ``chaoseval-sim``, real processes and sockets."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from chaoseval import redact
from chaoseval.agents.process import ProcessAgent
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings, TrialRecord
from chaoseval.store.journal import read_journal

pytestmark = pytest.mark.slow  # a process per trial, each importing openai and mcp

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_mcp_agent.py"
COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(EXAMPLE))}"
SCENARIOS = ["vending-refund-not-dispensed", "calendar-month-end-close"]
CELLS = [
    "model_error:modes=[500,reset],probability=0.7,retry_after=0.01",
    "timeout:modes=[raise,429,reset],probability=0.5",
    "malformed:probability=0.6",
]


def run_example(tmp_path: Path, cells: list[str], **kw) -> list[TrialRecord]:
    journal = tmp_path / f"{kw.pop('name', 'j')}.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), kw.pop("scenarios", SCENARIOS)),
            agent=ProcessAgent(COMMAND, grace=0.5),
            agent_name="exec:example",
            cells=parse_cells(cells),
            trials=kw.pop("trials", 2),
            seed=3,
            journal=journal,
            wall_timeout=60,
            **kw,
        )
    )
    return read_journal(journal).records


def test_the_example_imports_neither_chaoseval_nor_more_than_openai_and_mcp():
    source = EXAMPLE.read_text()
    imports = {
        line.split()[1].split(".")[0]
        for line in source.splitlines()
        if line.startswith(("import ", "from "))
    }
    assert imports <= {"__future__", "asyncio", "json", "os", "sys", "typing", "openai", "mcp"}


@pytest.fixture(scope="module")
def at_j8(tmp_path_factory: pytest.TempPathFactory) -> list[TrialRecord]:
    """Clean and three fault cells on two tasks: eight processes at once on one model server
    and one tool hub."""
    # At temperature 0 (applied by the model channel, the example sends none) its model
    # seldom slips: a clean trial that fails is the plumbing's fault, not a sampled slip.
    return run_example(
        tmp_path_factory.mktemp("j8"), CELLS, concurrency=8, trials=1,
        model=ModelSettings(temperature=0.0),
    )  # fmt: skip


def test_the_example_solves_scenarios_clean_and_degrades_under_faults(at_j8):
    records = at_j8
    clean = [r for r in records if r.cell == "clean"]
    assert clean and all(r.passed for r in clean), [(r.trial_id, r.error) for r in clean]
    assert all(any(s.kind == "model" for s in r.trajectory.steps) for r in clean)
    assert all(any(s.kind == "tool" for s in r.trajectory.steps) for r in clean)
    for cell in {r.cell for r in records} - {"clean"}:
        hit = [r for r in records if r.cell == cell]
        assert sum(r.passed for r in hit) < len(clean), cell  # pass^1 below clean
        landed = {r.scenario for r in hit if r.faults_delivered()}
        assert landed == set(SCENARIOS), cell  # faults delivered on every task


def test_the_example_survives_a_renamed_parameter(tmp_path):
    """tool_schema_drift renames a parameter of every tool the example lists: chaoseval-sim
    calls with the name the request's schema has (it failed 'orderId: Field required' before)."""
    cells = ["tool_schema_drift:modes=rename,probability=1", "tool_schema_drift:probability=1"]
    records = run_example(tmp_path, cells, scenarios=[SCENARIOS[0]], trials=2)
    drifted = [r for r in records if r.cell != "clean"]
    assert len(drifted) == 4 and all(r.faults_delivered() for r in drifted)
    assert all(r.passed for r in records), [(r.trial_id, r.error, r.answer) for r in records]


PLANTED = "sk-planted-upstream-key-123456"
LEAK = (
    "import json, os, sys\n"
    "from mcp import Client\n"
    "import asyncio\n"
    "env = dict(os.environ)\n"
    "async def main():\n"
    "    async with Client(os.environ['CHAOSEVAL_MCP_URL']) as c:\n"
    "        await c.call_tool('lookup_order', {'order_id': json.dumps(env)})\n"
    "asyncio.run(main())\n"
    "print(json.dumps(env), file=sys.stderr)\n"
    "print(json.dumps({'answer': json.dumps(env), 'data': env}))\n"
)


def test_a_planted_key_is_in_no_file_and_no_output(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from chaoseval.cli.app import app

    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    monkeypatch.setenv("MY_DB_PASSWORD", PLANTED + "-db")
    agent = tmp_path / "leak.py"
    agent.write_text(LEAK)
    journal = tmp_path / "j.jsonl"
    runner = CliRunner()
    outputs = [
        runner.invoke(
            app,
            [
                "run",
                "--agent",
                f"exec:{shlex.quote(sys.executable)} {shlex.quote(str(agent))}",
                "-s",
                "vending-refund-not-dispensed",
                "-n",
                "1",
                "--trial-timeout",
                "30",
                "--journal",
                str(journal),
            ],
        )
    ]
    for fmt in ("json", "markdown", "html", "junit", "table"):
        out = tmp_path / f"report.{fmt}"
        outputs.append(runner.invoke(app, ["report", str(journal), "-f", fmt, "-o", str(out)]))
        outputs.append(runner.invoke(app, ["report", str(journal), "-f", fmt]))
    outputs.append(runner.invoke(app, ["sample", str(journal), "-o", str(tmp_path / "s.md")]))
    outputs.append(runner.invoke(app, ["sample", str(journal)]))
    outputs.append(runner.invoke(app, ["diverge", str(journal), "-f", "json"]))
    trial_id = read_journal(journal).records[0].trial_id
    # Runs the trial again; its ports differ, so it says 'did not reproduce' (exit 1).
    replay = runner.invoke(app, ["replay", str(journal), trial_id])
    assert "did not reproduce" in replay.output and PLANTED not in replay.output
    assert "[REDACTED]" in replay.output
    assert outputs[0].exit_code == 0, outputs[0].output
    [record] = read_journal(journal).records
    assert record.trajectory.tool_steps() and record.artifacts
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != agent]
    assert len(written) > 5
    for path in written:
        text = path.read_text(errors="replace")
        assert PLANTED not in text, path
    for result in outputs:
        assert result.exit_code == 0, result.output
        assert PLANTED not in result.output
    assert "MY_DB_PASSWORD" in journal.read_text() and redact.MARKER in journal.read_text()
    assert os.environ["OPENAI_API_KEY"] == PLANTED


def test_eight_concurrent_exec_trials_never_mix_their_traffic(at_j8):
    """Eight processes at once, faulted and clean side by side: each clean trial's model and
    tool traffic is exactly that of the same trial run alone, in process, by openai-naive
    (chaoseval-sim makes the same decisions for the same trial seed), and no fault of a
    neighbour lands in it."""
    from chaoseval.agents.openai_agents import OpenAIAgent

    def ledger(records: list[TrialRecord]) -> dict[str, list]:
        return {
            r.trial_id: [
                (s.kind, s.tool, sorted(s.args.items()), s.result_class)
                if s.kind == "tool"
                else (s.kind, s.args["messages"], s.args["tools"], s.result["tool_calls"])
                for s in r.trajectory.steps
                if s.kind in ("tool", "model")
            ]
            + [r.status, r.answer, len(r.trajectory.faults)]
            for r in records
            if r.cell == "clean"
        }

    alone = run(
        RunConfig(
            scenarios=select(installed(), SCENARIOS),
            agent=OpenAIAgent(resilient=False),
            agent_name="openai-naive",
            trials=1,
            seed=3,
            model=ModelSettings(temperature=1.0),  # what the SDK asks for when it sets none
            concurrency=1,
        )
    ).records
    assert len(ledger(at_j8)) == 2
    assert ledger(at_j8) == ledger(alone)
    for record in at_j8:  # faulted trials call only their own scenario's tools
        own = {t.name for t in select(installed(), [record.scenario])[0].tools}
        assert {s.tool for s in record.trajectory.tool_steps()} <= own, record.trial_id


SDK_EXAMPLE = EXAMPLE.with_name("openai_agents_sdk_agent.py")


def test_an_openai_agents_sdk_example_runs_on_the_responses_api(tmp_path):
    """The Agents SDK's own loop (the Responses API, MCP tools) solves a scenario."""
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(SDK_EXAMPLE))}"
    journal = tmp_path / "sdk.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-refund-not-dispensed"]),
            agent=ProcessAgent(command, grace=0.5),
            agent_name="exec:agents-sdk",
            trials=1,
            seed=3,
            journal=journal,
            wall_timeout=90,
        )
    )
    [clean] = read_journal(journal).records
    assert clean.passed, (clean.error, clean.answer)
    model = [s for s in clean.trajectory.steps if s.kind == "model"]
    assert model and {s.args["endpoint"] for s in model} == {"responses"}
    assert clean.trajectory.tool_steps()  # its tools came over MCP
