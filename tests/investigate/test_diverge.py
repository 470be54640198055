"""Failure-trajectory analysis: earliest divergence, readable groups, stable errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.engine.runner import RunConfig, run
from chaoseval.investigate.diverge import analyse, diverge_one, semantic_steps
from chaoseval.loading.files import load_paths, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import Cell, ModelSettings, RunManifest, TrialRecord, Veto
from chaoseval.model.trajectory import Fault, Trajectory
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import Journal, read_journal

SCENARIO = "vending-refund-not-dispensed"
# The bundled file itself, so a colleague's half-written scenario elsewhere cannot break these.
VENDING = Path(__file__).resolve().parents[2] / "scenarios" / "vending.py"
TIMEOUT_CELL = "timeout:tools=read_dispense_log,modes=[raise],probability=0.5"


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> Journal:
    path = tmp_path_factory.mktemp("diverge") / "run.jsonl"
    run(
        RunConfig(
            scenarios=select(load_paths([VENDING]), [SCENARIO]),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells([TIMEOUT_CELL, "timeout:tools=read_dispense_log,probability=1"]),
            trials=16,
            seed=5,
            journal=path,
        )
    )
    return read_journal(path)


def _timeout_hit_second_call(r: TrialRecord) -> bool:
    tools = r.trajectory.tool_steps()
    return (
        len(tools) == 2
        and [s.tool for s in tools] == ["lookup_order", "read_dispense_log"]
        and tools[1].result_class == "timeout"
        and any(r.trajectory.faults[i].delivered for i in tools[1].faults)
    )


def test_injected_timeout_failures_diverge_at_the_log_read(journal: Journal) -> None:
    tasks = {t.cell: t for t in analyse(journal)}
    task = tasks[parse_cells([TIMEOUT_CELL])[0].name]
    assert task.passed and task.failed  # the 0.5 cell mixes successes and failures
    records = {r.trial_id: r for r in journal.records}
    hit = {d.trial_id for d in task.divergences if _timeout_hit_second_call(records[d.trial_id])}
    assert hit, "some trial should have lost its log read to the injected timeout"
    label = "after an injected timeout at step 2 (read_dispense_log): stopped instead of retrying"
    by_label = {g.label: set(g.trials) for g in task.groups}
    assert by_label.get(label) == hit
    for d in task.divergences:
        if d.trial_id in hit:
            assert d.step == 1  # 0-based: the second semantic step
    # Groups are ordered by where the failure left the path.
    assert [g.step for g in task.groups] == sorted(g.step for g in task.groups)


def test_all_failing_cell_is_compared_with_clean(journal: Journal) -> None:
    name = parse_cells(["timeout:tools=read_dispense_log,probability=1"])[0].name
    task = next(t for t in analyse(journal) if t.cell == name)
    assert task.passed == 0 and task.reference == "clean"
    assert task.consistency in ("stable error", "unstable errors")
    assert any("injected timeout at step 2" in g.label for g in task.groups)
    assert not next(t for t in analyse(journal, baseline=False) if t.cell == name).groups


# --- hand-written journals: the differences are known exactly ------------------------------


def _record(index: int, steps: list[dict[str, Any]], status: str = "passed", **kw) -> TrialRecord:
    traj = Trajectory()
    for s in steps:
        s = dict(s)
        fault = s.pop("fault", None)
        step = traj.add_step(s.pop("kind", "tool"), **s)
        if fault:
            i = traj.add_fault(
                Fault(perturbation="timeout", channel="tool", kind=fault, delivered=True)
            )
            step.faults = [i]
    return TrialRecord(
        run_id="r",
        trial_id=f"s/c/{index}",
        scenario="s",
        cell="c",
        index=index,
        seed=index,
        world_seed=0,
        agent="a",
        model=ModelSettings(),
        status=status,  # type: ignore[arg-type]
        trajectory=traj,
        started_at=datetime.now(UTC),
        **kw,
    )


def _journal(records: list[TrialRecord]) -> Journal:
    manifest = RunManifest(
        run_id="r",
        chaoseval_version="0",
        python="3",
        packages={},
        agent="a",
        model=ModelSettings(),
        seed=0,
        trials=len(records),
        ks=[1],
        clock="virtual",
        scenarios=[{"id": "s"}],
        cells=[Cell(name="c")],
        concurrency=1,
        created_at=datetime.now(UTC),
    )
    return Journal(Path("mem.jsonl"), manifest, records)


LOOKUP = {"tool": "lookup", "args": {"id": "A-1"}, "result_class": "ok"}
READ = {"tool": "read", "args": {"id": "A-1", "date": "2026-11-01"}, "result_class": "ok"}
REFUND = {"tool": "refund", "args": {"id": "A-1", "amount": 3.0}, "result_class": "ok"}
ANSWER = {"kind": "answer"}
GOOD = [LOOKUP, READ, REFUND, ANSWER]


def test_named_argument_divergence() -> None:
    wrong_date = {**READ, "args": {"id": "A-1", "date": "2026-11-02"}}
    records = [
        _record(0, GOOD),
        _record(1, GOOD),
        _record(2, [LOOKUP, wrong_date, REFUND, ANSWER], "failed", root_cause="wrong_answer"),
        _record(3, [LOOKUP, wrong_date, ANSWER], "failed", root_cause="wrong_answer"),
        _record(4, [LOOKUP, ANSWER], "failed", root_cause="premature_stop"),
        _record(5, GOOD, "failed", vetoes=[Veto(kind="hallucination", detail="ORD-9")]),
    ]
    (task,) = analyse(_journal(records))
    groups = {g.label: g.trials for g in task.groups}
    assert groups == {
        "step 2, read: date '2026-11-02' against '2026-11-01' in a passing trial": [
            "s/c/2",
            "s/c/3",
        ],
        "step 2: answered instead of calling read": ["s/c/4"],
        "step 4, answer: same steps, hallucination veto": ["s/c/5"],
    }
    assert task.consistency == "inconsistent"


def test_an_argument_that_differs_is_shown_with_both_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The twin view once said 'refund: amount differs', not what the failure sent against
    what a passing trial sent; each value is cut to one bounded line and redacted."""
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("SHOP_API_KEY", secret)
    long = "x" * 500
    refund = {**REFUND, "args": {"id": "A-1", "amount": 84.9, "note": "ok"}}
    wrong = {**REFUND, "args": {"id": "A-1", "amount": 99.0, "note": f"{secret} {long}"}}
    records = [
        _record(0, [LOOKUP, READ, refund, ANSWER]),
        _record(1, [LOOKUP, READ, wrong, ANSWER], "failed", root_cause="wrong_answer"),
    ]
    (task,) = analyse(_journal(records))
    (label,) = [d.label for d in task.divergences]
    assert label.startswith("step 3, refund: amount 99.0 against 84.9; note '[REDACTED] xxx")
    assert label.endswith("xxx… against 'ok' in a passing trial"), label
    assert secret not in label and len(label) < 160


def test_fault_then_stop_and_retry_labels() -> None:
    timed_out = {**READ, "result_class": "timeout", "fault": "timeout"}
    records = [
        _record(0, GOOD),
        _record(1, [LOOKUP, timed_out], "failed", root_cause="timeout"),
        _record(2, [LOOKUP, timed_out, READ, ANSWER], "failed", root_cause="wrong_answer"),
    ]
    (task,) = analyse(_journal(records))
    labels = {d.trial_id: d.label for d in task.divergences}
    assert (
        labels["s/c/1"] == "after an injected timeout at step 2 (read): stopped instead of retrying"
    )
    assert labels["s/c/2"] == "after an injected timeout at step 2 (read): retried"


def test_stable_error_is_not_called_stable() -> None:
    bad = [LOOKUP, ANSWER]
    same = [_record(i, bad, "failed", root_cause="premature_stop") for i in range(4)]
    (task,) = analyse(_journal(same))
    assert task.consistency == "stable error"
    mixed = [*same[:3], _record(3, [LOOKUP, READ, ANSWER], "failed", root_cause="wrong_answer")]
    assert analyse(_journal(mixed))[0].consistency == "unstable errors"
    assert analyse(_journal([_record(i, GOOD) for i in range(3)]))[0].consistency == "stable"


TOOLS = st.sampled_from(["a", "b", "c"])
SEQ = st.lists(TOOLS, max_size=5)


def _seq(tools: list[str]) -> list[dict[str, Any]]:
    return [{"tool": t, "args": {}, "result_class": "ok"} for t in tools] + [ANSWER]


@given(st.lists(SEQ, min_size=1, max_size=4), SEQ)
def test_divergence_is_the_longest_prefix_shared_with_a_success(
    successes: list[list[str]], failure: list[str]
) -> None:
    ok = [semantic_steps(_record(i, _seq(s))) for i, s in enumerate(successes)]
    failed = _record(99, _seq(failure), "failed", root_cause="wrong_answer")
    mine = semantic_steps(failed)
    div = diverge_one(failed, ok)
    if any(s == mine for s in ok):  # same steps as a success: blamed on the final answer
        assert "same steps" in div.label
        return
    assert any(s[: div.step] == mine[: div.step] for s in ok)
    assert not any(s[: div.step + 1] == mine[: div.step + 1] for s in ok)
    assert div.label.startswith(f"step {div.step + 1}") or f"step {div.step}" in div.label


def test_cli_json(journal: Journal) -> None:
    result = CliRunner().invoke(app, ["diverge", str(journal.path), "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {t["cell"] for t in data["tasks"]} == {r.cell for r in journal.records}
    table = CliRunner().invoke(app, ["diverge", str(journal.path)])
    assert table.exit_code == 0 and "first divergence" in table.output


def test_cli_json_streams_the_document_json_dumps_writes(journal: Journal, tmp_path: Path) -> None:
    """-f json writes a task at a time (Analysed makes each when iterated and holds none of
    them: 300k tasks as objects and one string were ~1.2 GB), byte for byte the document of
    analyse(), to a file and to standard output."""
    import gc
    import weakref

    from chaoseval.investigate.diverge import Analysed, TaskAnalysis, to_json
    from chaoseval.store.columns import read_trials

    t = read_trials(journal.path)
    expected = json.dumps(to_json(analyse(t), t), indent=2) + "\n"
    out = tmp_path / "d.json"
    result = CliRunner().invoke(app, ["diverge", str(journal.path), "-f", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == expected
    shown = CliRunner().invoke(app, ["diverge", str(journal.path), "-f", "json"])
    assert shown.output == expected
    made: list[weakref.ref[TaskAnalysis]] = []
    for task in Analysed(t):
        gc.collect()
        assert all(r() is None for r in made), "an earlier task is still held"
        made.append(weakref.ref(task))
        del task
    assert len(made) == len(analyse(t)) > 1


def test_a_journal_file_reads_as_the_records_do(tmp_path: Path) -> None:
    """diverge reads a file's lines in part (msgspec); a line only pydantic's lax mode reads
    (gave_up as the string "true") goes to pydantic. Both give what the records give."""
    from chaoseval.investigate.diverge import to_json
    from chaoseval.store.columns import read_trials
    from chaoseval.store.journal import JournalWriter

    timed_out = {**READ, "result_class": "timeout", "fault": "timeout"}
    gave_up = {"kind": "answer", "data": {"gave_up": True}}
    records = [
        _record(0, GOOD),
        _record(1, [LOOKUP, READ, REFUND, ANSWER]),
        _record(2, [LOOKUP, timed_out, gave_up], "failed", root_cause="gave_up"),
        _record(3, [LOOKUP, READ, gave_up], "failed", root_cause="gave_up"),
        _record(4, [LOOKUP, wrong := {**READ, "args": {"id": "B-2"}}, ANSWER], "failed"),
        _record(5, [LOOKUP, wrong, ANSWER], "failed", root_cause="wrong_answer"),
    ]
    memory = _journal(records)
    path = tmp_path / "run.jsonl"
    writer = JournalWriter(path, memory.manifest, truncate_cut_off=False)
    for r in records:
        writer.append(r)
    writer.close()
    text = path.read_text()
    assert text.count('"gave_up":true') == 2
    path.write_text(text.replace('"gave_up":true', '"gave_up":"true"', 1))
    from_file = to_json(analyse(read_trials(path)), read_trials(path))
    expected = to_json(analyse(memory), memory)
    assert from_file["tasks"] == expected["tasks"]
    labels = [g["label"] for g in from_file["tasks"][0]["groups"]]
    assert "step 3: gave up instead of calling refund" in labels
