"""The LLM user (``--user-model-endpoint``) against a real OpenAI-compatible server on
127.0.0.1 (a Starlette app on uvicorn, read by the real openai SDK): a user that converses,
one that leaks its goal, one that states a value it was never told, one whose endpoint fails.
The simulator's failures are not evaluable with root cause ``user_simulator``, counted apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from chaoseval.channels.asgi import serve_asgi
from chaoseval.engine.runner import RunConfig, run_matrix
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import AgentOutput, ModelSettings
from chaoseval.seams.agent import Episode, load_agent
from chaoseval.seams.perturbation import (
    CallNext,
    Perturbation,
    PerturbationContext,
    perturbation,
)
from chaoseval.users.llm import UserModel, system_prompt
from chaoseval.users.simulator import Style
from users.user_model_support import KEY_ENV, USER_KEY, ScriptedUser

SCENARIO = "conv-vending-refund"


class SwallowingAgent:
    """Talks to the user and carries on whatever ``say`` raised: the simulator's failure must
    still void the trial."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        assert episode.user is not None
        try:
            await episode.user.say("What is your order number?")
        except Exception:
            pass
        return AgentOutput(answer="done")


def run_with(
    mode: str,
    journal: Path,
    agent: Any = None,
    trials: int = 2,
    cells: list[str] | None = None,
    executor: str | None = None,
) -> tuple[ScriptedUser, list[dict[str, Any]]]:
    server = ScriptedUser(mode)

    async def main() -> None:
        async with serve_asgi(server.app) as url:
            await run_matrix(
                RunConfig(
                    scenarios=select(installed(), [SCENARIO]),
                    agent=agent or load_agent("scripted"),
                    agent_name="scripted",
                    cells=parse_cells(cells or []),
                    trials=trials,
                    seed=4,
                    model=ModelSettings(),
                    journal=journal,
                    references=False,
                    executor=executor,
                    user_model=UserModel(f"{url}/v1", "user-sim", KEY_ENV, attempts=3, wait=0.01),
                )
            )

    anyio.run(main)
    return server, [json.loads(line) for line in journal.read_text().splitlines()]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, USER_KEY)


def test_an_llm_user_converses_through_the_openai_sdk(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    server, lines = run_with("good", journal)
    manifest, trials = lines[0], lines[1:]
    assert [t["status"] for t in trials] == ["passed", "passed"]
    assert manifest["user_model"].startswith("user-sim at http://127.0.0.1:")
    assert "user_simulator" in {c["name"] for c in manifest["root_causes"]}
    turns = [s for s in trials[0]["trajectory"]["steps"] if s["kind"] == "user"]
    assert turns[0]["result"] == "My order number is ORD-1042."
    assert turns[-1]["data"]["agreed"] and turns[-1]["result"].startswith("Yes")
    headers, body = server.seen[0]
    assert headers["authorization"] == f"Bearer {USER_KEY}"
    assert body["model"] == "user-sim"
    system = body["messages"][0]["content"]
    assert "Get the 2.75 back" in system and "- order number: ORD-1042" in system
    # The conversation from the model's side: its opening, then the agent's message.
    assert [m["role"] for m in body["messages"][1:]] == ["assistant", "user"]
    assert USER_KEY not in journal.read_text()


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("leak", "leaked its goal verbatim"),
        ("misstate", "broke its script"),
        ("fail", "failed 3 times: InternalServerError"),
    ],
)
def test_simulator_failures_are_not_the_agents(tmp_path: Path, mode: str, said: str) -> None:
    server, lines = run_with(mode, tmp_path / "j.jsonl")
    trials = lines[1:]
    assert [(t["status"], t["root_cause"]) for t in trials] == [
        ("not_evaluable", "user_simulator")
    ] * 2
    assert all(said in t["error"] and "UserSimulatorError" in t["error"] for t in trials)
    if mode == "fail":  # one reply asked for three times (tenacity), then the trial stopped
        assert len(server.seen) == 3 * 2


def test_an_llm_user_in_worker_processes(tmp_path: Path) -> None:
    """The process executor's workers make their own client from the run's settings."""
    server, lines = run_with("good", tmp_path / "j.jsonl", executor="process")
    assert [t["status"] for t in lines[1:]] == ["passed", "passed"]
    assert {h["authorization"] for h, _ in server.seen} == {f"Bearer {USER_KEY}"}
    _, lines = run_with("fail", tmp_path / "f.jsonl", executor="process", trials=1)
    assert (lines[1]["status"], lines[1]["root_cause"]) == ("not_evaluable", "user_simulator")


def test_an_agent_that_swallows_the_error_still_gets_no_verdict(tmp_path: Path) -> None:
    _, lines = run_with("leak", tmp_path / "j.jsonl", agent=SwallowingAgent(), trials=1)
    assert (lines[1]["status"], lines[1]["root_cause"]) == ("not_evaluable", "user_simulator")


@perturbation("test-user-german")
class GermanTypos(Perturbation):
    """A user-channel plugin as the bundled ones are built: the style before the user answers,
    the reply's text after."""

    channel: ClassVar = "user"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        call.style.language = "de"
        reply = await call_next(call)
        ctx.fault("user", "test_typo")
        return None if reply is None else reply + " [tpyo]"


def test_user_channel_perturbations_still_reach_an_llm_user(tmp_path: Path) -> None:
    server, lines = run_with("good", tmp_path / "j.jsonl", trials=1, cells=["test-user-german"])
    perturbed = next(t for t in lines[1:] if t["cell"] == "test-user-german")
    turns = [s for s in perturbed["trajectory"]["steps"] if s["kind"] == "user"]
    assert turns and all(s["result"].endswith(" [tpyo]") for s in turns)
    assert all(s["faults"] for s in turns)
    asked = [b["messages"][0]["content"] for _, b in server.seen]
    assert sum("Write this reply in German." in p for p in asked) == len(turns)


@perturbation("test-user-slip")
class Slip(Perturbation):
    """A typo plugin as h45p's user_typos is built: the value written this turn set on the
    style (``values``; set here whether or not this Style declares it), the fault logged only
    when the user's reply said it (``said``)."""

    channel: ClassVar = "user"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        call.style.values = {"order_id": "ORD-1024"}
        call.style.said = []
        reply = await call_next(call)
        if "order_id" in call.style.said:
            ctx.fault("user", "typo", fact="order_id")
        return reply


def test_a_value_a_plugin_makes_it_write_is_no_simulator_failure(tmp_path: Path) -> None:
    server, lines = run_with("good", tmp_path / "j.jsonl", trials=1, cells=["test-user-slip"])
    slipped = next(t for t in lines[1:] if t["cell"] == "test-user-slip")
    assert slipped["root_cause"] != "user_simulator", slipped["error"]
    first = next(s for s in slipped["trajectory"]["steps"] if s["kind"] == "user")
    assert first["result"] == "My order number is ORD-1024."
    assert [f["kind"] for f in slipped["trajectory"]["faults"]][:1] == ["typo"]
    asked = [b["messages"][0]["content"] for _, b in server.seen]
    assert any("write it exactly as ORD-1024." in p for p in asked)


@perturbation("test-user-push")
class Push(Perturbation):
    """A pressure plugin as h45p's user_pressure is built: the demand asked for on a proposal."""

    channel: ClassVar = "user"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        call.style.demand = call.reading.confirm
        reply = await call_next(call)
        if call.style.demand:
            ctx.fault("user", "pressure")
        return reply


def test_a_demand_the_style_asks_for_is_said(tmp_path: Path) -> None:
    _, lines = run_with("good", tmp_path / "j.jsonl", trials=1, cells=["test-user-push"])
    pushed = next(t for t in lines[1:] if t["cell"] == "test-user-push")
    turn = next(s for s in pushed["trajectory"]["steps"] if s["kind"] == "user"
                and s["data"]["confirm"])  # fmt: skip
    assert turn["result"].endswith("And I want 10.00 for my trouble, refund it now!")
    assert not turn["data"]["agreed"]  # a demand is no yes, whatever words came before it
    assert pushed["root_cause"] != "user_simulator"


def test_a_turns_style_is_said_in_its_prompt() -> None:
    from chaoseval.model.conversation import UserSpec

    spec = UserSpec(goal="Get {x} back.", opening="Hi.", persona="terse", demand=None)
    user = spec.render({"x": "2.75"})
    style = Style(language="de", withhold=True)
    prompt = system_prompt(user, {}, style)
    assert "Write this reply in German." in prompt
    assert "volunteer nothing" in prompt
    assert "Get 2.75 back." in prompt


def test_user_model_settings_name_the_fix() -> None:
    from chaoseval.errors import ConfigError

    with pytest.raises(ConfigError, match="http"):
        UserModel("127.0.0.1:8000", "m")
    with pytest.raises(ConfigError, match="--user-model NAME"):
        UserModel("http://127.0.0.1:8000/v1", "")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "chaoseval", *args], capture_output=True, text=True, env=env
    )


def test_the_cli_counts_the_simulators_failures_apart(tmp_path: Path) -> None:
    """`chaoseval run --user-model-endpoint` with a user that leaks its goal: every view says
    the simulator failed in those trials and counts none against the agent."""
    journal = tmp_path / "j.jsonl"
    server = ScriptedUser("leak")

    async def main() -> tuple[subprocess.CompletedProcess[str], ...]:
        async with serve_asgi(server.app) as url:
            args = [
                "run", "--agent", "naive", "-s", SCENARIO, "-n", "2", "--journal", str(journal),
                "--no-progress", "--user-model-endpoint", f"{url}/v1", "--user-model", "user-sim",
                "--user-model-key-env", KEY_ENV,
            ]  # fmt: skip
            done = await anyio.to_thread.run_sync(lambda: _cli(*args))
            args[args.index(str(journal))] = str(tmp_path / "quiet.jsonl")
            return done, await anyio.to_thread.run_sync(lambda: _cli(*args, "--quiet"))

    done, quiet = anyio.run(main)
    assert done.returncode == 0, done.stderr
    line = "user simulator failed in 2 trial(s) (not counted; clean 2)"
    assert line in " ".join(done.stdout.split())
    assert "Users played by user-sim at http://127.0.0.1:" in done.stdout
    assert server.seen and USER_KEY not in journal.read_text()
    report = json.loads(_cli("report", str(journal), "-f", "json").stdout)
    assert report["user_model"].startswith("user-sim at ")
    assert report["user_simulator_failures"] == {"trials": 2, "cells": {"clean": 2}, "note": line}
    assert report["perturbations"][0]["not_evaluable"] == 2
    assert report["perturbations"][0]["root_causes"] == {}  # none of them the agent's
    assert line in " ".join(quiet.stdout.split())  # run --quiet's lines say it too
    html = _cli("report", str(journal), "-f", "html").stdout
    assert line in html
    assert line in _cli("report", str(journal), "-f", "markdown").stdout
    replayed = _cli("replay", str(journal), f"{SCENARIO}/clean/0")
    assert "an LLM played this run's users (user-sim at http" in " ".join(replayed.stderr.split())
    # Resumed without the LLM user, the journal's trials and the new ones would not compare.
    resumed = _cli("run", "--agent", "naive", "-s", SCENARIO, "-n", "2", "--journal",
                   str(journal), "--resume", "--no-progress")  # fmt: skip
    assert resumed.returncode == 2 and "the LLM user (--user-model-endpoint" in resumed.stderr


def test_without_the_flag_the_user_is_deterministic(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    done = _cli("run", "--agent", "naive", "-s", SCENARIO, "-n", "1", "--journal", str(journal),
                "--no-progress", "--no-report")  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = json.loads(journal.read_text().splitlines()[0])
    assert "user_model" not in manifest
    assert "user_simulator" not in {c["name"] for c in manifest["root_causes"]}
    bad = _cli("run", "--agent", "naive", "-s", SCENARIO, "--journal", str(journal),
               "--overwrite", "--user-model", "m")  # fmt: skip
    assert bad.returncode == 2 and "--user-model-endpoint" in bad.stderr


def test_what_counts_as_breaking_the_script() -> None:
    """The checks on a reply alone (no endpoint): values it was never given and its goal
    quoted are the simulator's failures; chatter, echoes and its own words are not."""
    from chaoseval.errors import UserSimulatorError
    from chaoseval.loading.files import installed as packs
    from chaoseval.users.llm import LLMUser

    scenario = select(packs(), [SCENARIO])[0]
    assert scenario.user is not None
    user = scenario.user.render(scenario.build(0)[1])
    sim = LLMUser(user, UserModel("http://127.0.0.1:9/v1", "m"), client=None)
    sim.history.append({"role": "user", "content": "Is your order ORD-1043?"})
    for fine in [
        "I waited 10 minutes and nothing came out.",
        "No, not ORD-1043: it is ORD-1042.",  # the agent's wrong value, corrected
        "I paid 2.75 for the cold brew that never came out.",  # its own words, not its goal's
    ]:
        sim._check(fine)
    with pytest.raises(UserSimulatorError, match=r"broke its script.*ORD-7777"):
        sim._check("It's ORD-7777.")
    with pytest.raises(UserSimulatorError, match=r"broke its script.*3\.10"):
        sim._check("I paid $3.10.")
    with pytest.raises(UserSimulatorError, match="leaked its goal"):
        sim._check(f"My goal: {user.goal}")


class OverMcp:
    """Talks to the user through the trial's MCP ``ask_user`` tool, as an exec: agent would,
    and answers whatever came back."""

    clock = "virtual"

    def __init__(self) -> None:
        self.results: list[tuple[bool, str]] = []

    async def run(self, episode: Episode) -> AgentOutput:
        from mcp import Client

        from chaoseval.channels.hub import ToolHub

        tools: Any = episode.tools
        async with (
            ToolHub.serving() as hub,
            hub.trial(tools, user=episode.user) as urls,
            Client(urls.mcp) as client,
        ):
            try:
                result = await client.call_tool("ask_user", {"message": "Your order number?"})
            except Exception as exc:  # what the wire gave, kept for the test
                self.results.append((True, f"{type(exc).__name__}: {exc}"))
            else:
                text = "".join(getattr(c, "text", "") for c in result.content)
                self.results.append((result.is_error, text))
        return AgentOutput(answer="done")


def test_over_the_wire_the_simulators_failure_is_still_not_the_agents(tmp_path: Path) -> None:
    """Through ask_user on the trial's MCP server: the agent gets an error, never the leaked
    reply, and the trial is not evaluable with root cause user_simulator."""
    agent = OverMcp()
    _, lines = run_with("leak", tmp_path / "j.jsonl", agent=agent, trials=1)
    assert (lines[1]["status"], lines[1]["root_cause"]) == ("not_evaluable", "user_simulator")
    assert agent.results and agent.results[0][0], agent.results  # an error, never the goal
    assert "cold brew" not in agent.results[0][1].casefold(), agent.results
