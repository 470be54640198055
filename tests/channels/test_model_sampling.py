"""The configured sampling settings reach an agent's model calls, and reports say which values
were configured and which the requests sent."""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import openai
from model_support import model_steps, run_agent
from test_model_wire_shapes import ShapeAgent, chat_tools, final, run_tool

from chaoseval.agents.process import ProcessAgent
from chaoseval.analysis.sampling import sampling_json, sampling_lines
from chaoseval.channels.model.session import ModelEndpoint
from chaoseval.engine.runner import RunConfig, run
from chaoseval.investigate.replay import to_markdown
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import AgentOutput, ModelSettings, TrialRecord
from chaoseval.render.report import json_report
from chaoseval.seams.agent import Episode
from chaoseval.store.columns import read_trials
from chaoseval.store.journal import read_journal

SCENARIO = "library-renew-loan"


def agent(temperature: float | None = None) -> ShapeAgent:
    """A chat tool loop that sends a temperature only when given one."""

    async def loop(episode: Episode, endpoint: ModelEndpoint) -> AgentOutput:
        client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key)
        extra: dict[str, Any] = {} if temperature is None else {"temperature": temperature}
        messages: list[Any] = [{"role": "user", "content": episode.instruction}]
        async with client:
            for _ in range(30):
                reply = await client.chat.completions.create(
                    model="m", messages=messages, tools=chat_tools(episode), **extra
                )
                message = reply.choices[0].message
                if not message.tool_calls:
                    return final(message.content)
                call = message.tool_calls[0]
                value, exc = await run_tool(episode, call.function.name, call.function.arguments)
                content = json.dumps({"error": str(exc)}) if exc else json.dumps(value)
                messages += [
                    message.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": call.id, "content": content},
                ]
        raise AssertionError("no answer")

    return ShapeAgent(loop)


def _run(journal: Path, a: Any, name: str, **config: Any) -> None:
    """A run of ``a`` on the scenario, seed 7, into ``journal``."""
    scenarios = select(installed(), [SCENARIO])
    run(RunConfig(scenarios=scenarios, agent=a, agent_name=name, seed=7, journal=journal, **config))


def outcomes(records: list[TrialRecord]) -> list[str]:
    return [r.status for r in sorted(records, key=lambda r: r.index)]


def test_the_configured_temperature_reaches_an_agent_that_sends_none() -> None:
    cold = run_agent(agent(), [SCENARIO], trials=6, seed=7, temperature=0.0)
    hot = run_agent(agent(), [SCENARIO], trials=6, seed=7, temperature=2.0)
    assert outcomes(cold) != outcomes(hot), outcomes(cold)
    for records, t in ((cold, 0.0), (hot, 2.0)):
        steps = [s.args or {} for r in records for s in model_steps(r)]
        assert steps and all(a["sent_temperature"] is None for a in steps)
        assert {a["temperature"] for a in steps} == {t}


def test_an_agent_that_sends_its_own_temperature_keeps_it_and_the_report_says_so(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "own.jsonl"
    _run(
        journal,
        agent(temperature=0.3),
        "own-temperature",
        trials=2,
        model=ModelSettings(temperature=1.5),
    )
    trials = read_trials(journal)
    doc = json_report(trials)["sampling"]
    requests = doc["requests"]
    assert requests > 0 and doc["temperature"]["configured"] == 1.5
    assert doc["temperature"]["sent"] == {"0.3": requests} == doc["temperature"]["used"]
    assert doc["temperature"]["overridden"] is True
    (line, _) = sampling_lines(trials.manifest.model, trials.sampling)
    assert "the agent sent T=0.3" in line and "overrides the configured value" in line
    # ... and so does a spot-check sample of the journal.
    assert line in to_markdown(read_journal(journal).records[:1], trials)


def test_the_temperature_line_says_what_a_sampling_perturbation_applied(tmp_path: Path) -> None:
    """With -p sampling the line said 'T=0.7 applied' beside the values used: the channel
    fills in the configured value, and the perturbation rewrites it in its cell. It says the
    values the requests that sent none were given, and which were not the configured one."""
    journal = tmp_path / "sampled.jsonl"
    _run(
        journal,
        agent(),
        "sends-none",
        cells=parse_cells(["sampling:temperature=1.2"]),
        trials=2,
        model=ModelSettings(temperature=0.7),
    )
    trials = read_trials(journal)
    used = json_report(trials)["sampling"]["temperature"]["used"]
    assert set(used) == {"0.7", "1.2"}, used
    (line, _) = sampling_lines(trials.manifest.model, trials.sampling)
    total = sum(used.values())
    assert line == (
        f"temperature: configured T=0.7; {total} of {total} requests sent no temperature and "
        f"were given T=0.7 ({used['0.7']}), T=1.2 ({used['1.2']}: not the configured value, "
        f"a perturbation's); used T=0.7 ({used['0.7']}), T=1.2 ({used['1.2']})"
    ), line
    assert "T=0.7 applied" not in line


def test_a_run_without_a_model_channel_says_nothing_of_sampling() -> None:
    assert sampling_json(ModelSettings(), Counter()) == {}
    assert sampling_lines(ModelSettings(), Counter()) == []


def test_an_exec_agent_is_told_the_configured_temperature_and_seed(tmp_path: Path) -> None:
    script = tmp_path / "env_agent.py"
    script.write_text(
        "import json, os\n"
        "keys = ('CHAOSEVAL_TEMPERATURE', 'CHAOSEVAL_MODEL_SEED')\n"
        "print(json.dumps({'answer': json.dumps({k: os.environ.get(k) for k in keys})}))\n"
    )
    journal = tmp_path / "env.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=ProcessAgent(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"),
            agent_name="exec:env",
            trials=1,
            seed=7,
            model=ModelSettings(temperature=0.25, seed=42),
            journal=journal,
            references=False,
        )
    )
    (record,) = read_journal(journal).records
    assert json.loads(record.answer or "") == {
        "CHAOSEVAL_TEMPERATURE": "0.25",
        "CHAOSEVAL_MODEL_SEED": "42",
    }


def test_a_non_numeric_temperature_or_seed_is_a_400_in_each_apis_shape(tmp_path: Path) -> None:
    """A real endpoint refuses ``"temperature": {...}``: so does the channel, with the field
    named, where it used to raise inside the app (a 500, retried by SDKs as a server fault)."""
    import httpx

    async def loop(episode: Episode, endpoint: ModelEndpoint) -> AgentOutput:
        key = {"authorization": f"Bearer {endpoint.api_key}"}
        base = endpoint.base_url.rstrip("/")
        shown = []
        async with httpx.AsyncClient() as client:
            for path, extra in (
                ("/chat/completions", {"temperature": {"t": 1}}),
                ("/responses", {"seed": [1]}),
                ("/messages", {"temperature": "hot", "max_tokens": 5}),
                ("/chat/completions", {"seed": True}),
            ):
                payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
                reply = await client.post(base + path, json={**payload, **extra}, headers=key)
                shown.append(f"{reply.status_code} {reply.json()['error']['message']}")
        return AgentOutput(answer="\n".join(shown))

    journal = tmp_path / "bad.jsonl"
    _run(journal, ShapeAgent(loop), "bad-sampling", trials=1)
    (record,) = read_journal(journal).records
    lines = (record.answer or "").splitlines()
    assert record.error is None, record.error
    assert [line.split(" ", 1)[0] for line in lines] == ["400"] * 4, lines
    named = [line.split(" ", 2)[1] for line in lines]
    assert named == ["temperature", "seed", "temperature", "seed"]
    read_trials(journal)  # the journal reads


def test_a_journal_holding_an_object_as_a_sampling_value_still_reads(tmp_path: Path) -> None:
    """Journals written before that refusal can hold one; every reader tallied it as a key."""
    journal = tmp_path / "old.jsonl"
    _run(journal, agent(), "old", trials=1)
    lines = journal.read_text().splitlines()
    for i, line in enumerate(lines):
        doc = json.loads(line)
        for step in (doc.get("trajectory") or {}).get("steps", []):
            if step.get("kind") == "model":
                step["args"]["sent_temperature"] = {"t": 1}
                step["args"]["sent_seed"] = [1]
        lines[i] = json.dumps(doc)
    journal.write_text("\n".join(lines) + "\n")
    doc = json_report(read_trials(journal))["sampling"]
    assert doc["temperature"]["sent"] == {'{"t": 1}': doc["requests"]}
