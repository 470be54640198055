"""The openai-naive / openai-resilient reference agents under model-channel faults."""

from __future__ import annotations

from model_support import info, model_steps, run_agent

from chaoseval.agents.openai_agents import OpenAIAgent
from chaoseval.loading.files import installed
from chaoseval.model.records import TrialRecord

ERRORS = "model_error:modes=[429,500,reset],retry_after=0.01,probability=0.4"
MALFORMED = "model_malformed:probability=0.5"


def passed(records: list[TrialRecord], cell: str) -> int:
    return sum(r.passed for r in records if r.cell == cell)


def test_naive_agent_breaks_on_model_errors_and_resilient_agent_absorbs_them() -> None:
    naive = run_agent(OpenAIAgent(resilient=False), cells=[ERRORS], trials=4)
    resilient = run_agent(OpenAIAgent(resilient=True, stream=True), cells=[ERRORS], trials=4)
    hit = [r for r in naive if r.cell != "clean"]
    assert passed(naive, "clean") == 4
    assert passed(naive, hit[0].cell) < 4
    assert {r.root_cause for r in hit if not r.passed} == {"model_api_error"}
    assert all(r.faults_delivered() for r in hit if not r.passed)
    assert passed(resilient, hit[0].cell) == passed(resilient, "clean") == 4
    absorbed = [f for r in resilient for f in r.trajectory.faults if f.detail.get("absorbed")]
    assert absorbed and all(f.delivered for f in absorbed)


def test_malformed_model_answers_crash_the_naive_agent_not_the_resilient_one() -> None:
    naive = run_agent(OpenAIAgent(resilient=False), cells=[MALFORMED], trials=4)
    resilient = run_agent(OpenAIAgent(resilient=True), cells=[MALFORMED], trials=4)
    cell = next(r.cell for r in naive if r.cell != "clean")
    assert passed(naive, cell) < passed(naive, "clean")
    assert "malformed_model_output" in {r.root_cause for r in naive if not r.passed}
    assert passed(resilient, cell) == passed(resilient, "clean")
    malformed = [s for r in resilient for s in model_steps(r) if s.result_class == "malformed"]
    assert malformed


def test_concurrent_trials_never_mix_their_model_traffic() -> None:
    """Eight trials at once on one server: each conversation is its own, byte for byte."""
    scenarios = [s.id for s in installed() if s.ui is None][:4]

    def ledger(concurrency: int) -> dict[str, list[tuple[str, list[str]]]]:
        records = run_agent(
            OpenAIAgent(resilient=False), scenarios, trials=2, concurrency=concurrency
        )
        return {
            r.trial_id: [(info(s)["request_hash"], info(s)["tool_calls"]) for s in model_steps(r)]
            + [(r.status, [t.tool or "" for t in r.trajectory.tool_steps()])]
            for r in records
        }

    assert ledger(8) == ledger(1)
