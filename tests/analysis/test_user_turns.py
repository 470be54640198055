"""Turns per task in the process metrics: the agent's messages to a conversational scenario's
user, counted per trial of the tasks with a user, shown in the report's process section."""

from __future__ import annotations

from pathlib import Path

from chaoseval.analysis.build import analyze
from chaoseval.analysis.gate import evaluate, parse_rule
from chaoseval.analysis.measures import measure
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.records import ModelSettings
from chaoseval.render.tables import process_table
from chaoseval.seams.agent import load_agent
from chaoseval.store.columns import read_trials


def _journal(tmp_path: Path, scenarios: list[str]) -> Path:
    journal = tmp_path / "j.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), scenarios),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=[],
            trials=2,
            seed=1,
            model=ModelSettings(),
            journal=journal,
            references=False,
        )
    )
    return journal


def test_user_turns_per_trial_of_the_tasks_with_a_user(tmp_path: Path) -> None:
    t = read_trials(_journal(tmp_path, ["conv-vending-refund", "calendar-next-tuesday"]))
    records = t.iter_records(range(len(t)))
    turns = {r.trial_id: sum(s.kind == "user" for s in r.trajectory.steps) for r in records}
    conv = [n for tid, n in turns.items() if tid.startswith("conv-")]
    assert all(n > 0 for n in conv)
    assert all(n == 0 for tid, n in turns.items() if not tid.startswith("conv-"))
    a = analyze(t, [1], n_resamples=200, references=False)
    p = a.process["clean"]
    assert p.user_turns_mean == sum(conv) / len(conv)  # the calendar task's trials left out
    assert p.to_json()["user_turns_mean"] == p.user_turns_mean
    table = process_table(a)
    at = table.columns.index("user turns/trial")
    assert table.rows[0][at] == f"{p.user_turns_mean:.2f}"
    by_trial = {m.trial_id: m.user_turns for m in measure(t)}
    assert by_trial == turns
    # A gate rule on turns: the measures of every scored trial, the calendar task's zeros too.
    rule = evaluate(a, [parse_rule("max(user_turns) <= 8")])[0]
    assert rule.measured == max(turns.values()) and rule.passed


def test_no_user_no_column(tmp_path: Path) -> None:
    t = read_trials(_journal(tmp_path, ["calendar-next-tuesday"]))
    a = analyze(t, [1], n_resamples=200, references=False)
    assert a.process["clean"].user_turns_mean is None
    assert "user_turns_mean" not in a.process["clean"].to_json()
    assert "user turns/trial" not in process_table(a).columns
