"""The ``drift`` plugin: each rule and trigger fires, is delivered when the agent meets it and
is judged (a write on the stale read fails the trial); a point never met did not land; the
YAML ``drift:`` section is linted at its line; the reference agents differ as documented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chaoseval.analysis.aggregate import by_cell
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ScenarioError, ToolHTTPError
from chaoseval.loading.files import installed, load_paths, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.drift import DriftPoint
from chaoseval.model.records import TrialRecord
from chaoseval.model.scenario import Check, Scenario, tool
from chaoseval.seams.agent import AgentOutput, Episode, load_agent

DOC = """\
id: drift-test
description: reserve units if there is stock
domain: shop
instruction: "Reserve {qty} of {sku}"
tables:
  stock:
    - {sku: S-1, available: 8, owner: shop}
    - {sku: S-2, available: 9, owner: shop}
  holds: []
givens: {sku: S-1, qty: 3}
tools:
  check_stock: {kind: lookup, table: stock, key: sku}
  hold:
    kind: create
    table: holds
    args: {sku: str, qty: int}
    id: {column: hold_id, prefix: H}
  hold_checked:
    kind: create
    table: holds
    args: {sku: str, qty: int}
    id: {column: hold_id, prefix: H}
    requires:
      - {check: "tables.stock[sku={sku}].available >= {qty}", error: "not enough stock"}
  take_over:
    kind: update
    table: stock
    key: sku
    set: {owner: agent}
checks:
  - expect: "count(tables.holds) == 1"
drift:
  - {POINT}
solution:
  steps:
    - {id: s, call: check_stock, args: {sku: "{sku}"}}
    - {call: hold, args: {sku: "{sku}", qty: "{qty}"}}
  answer: "held"
"""
SET_SILENT = "table: stock, row: {sku: '{sku}'}, field: available, set: 0"


def _scenario(tmp_path: Path, point: str = SET_SILENT) -> Scenario:
    path = tmp_path / "drift.yaml"
    path.write_text(DOC.replace("{POINT}", "{" + point + "}"))
    (scenario,) = load_paths([path])
    return scenario


class ReadThenWrite:
    """Reads the stock, optionally waits on the trial clock, then writes what it planned."""

    clock = "virtual"

    def __init__(self, write: str = "hold", wait: float = 0.0, reread: bool = False):
        self.write, self.wait, self.reread = write, wait, reread
        self.errors: list[ToolHTTPError] = []

    async def run(self, episode: Episode) -> AgentOutput:
        seen = await episode.tools.call("check_stock", sku="S-1")
        if self.wait:
            await episode.clock.sleep(self.wait)
        args: dict[str, Any] = {"sku": "S-1"}
        if self.write.startswith("hold"):
            args["qty"] = 3
        try:
            await episode.tools.call(self.write, **args)
        except ToolHTTPError as exc:
            self.errors.append(exc)
            if not self.reread:
                raise
            now = await episode.tools.call("check_stock", sku="S-1")
            return AgentOutput(answer=f"out of stock ({now['available']}), was {seen['available']}")
        return AgentOutput(answer="held")


def _run(scenario: Scenario, agent: Any, cell: str = "drift", trials: int = 1, seed: int = 0):
    records = run(
        RunConfig(
            scenarios=[scenario],
            agent=agent,
            agent_name="probe",
            cells=parse_cells([cell]),
            trials=trials,
            seed=seed,
            references=False,
        )
    ).records
    clean = [r for r in records if r.cell == "clean"]
    drifted = [r for r in records if r.cell != "clean"]
    return clean, drifted


def _faults(record: TrialRecord) -> list[tuple[str, bool]]:
    return [(f.kind, f.delivered) for f in record.trajectory.faults]


def test_set_silent_a_write_on_the_stale_read_fails_the_trial(tmp_path: Path) -> None:
    clean, (drifted,) = _run(_scenario(tmp_path), ReadThenWrite())
    assert [r.status for r in clean] == ["passed"]
    # Every check passed (one hold was made), but on stock read before it sold out.
    assert all(c.passed for c in drifted.checks)
    assert drifted.status == "failed" and drifted.root_cause == "wrote_on_stale_read"
    assert _faults(drifted) == [("stale_write", True)]
    fault = drifted.trajectory.faults[0]
    assert (fault.detail["old"], fault.detail["new"], fault.detail["tool"]) == (8, 0, "hold")
    assert "changed from 8 to 0" in (drifted.error or "")


def test_a_stale_write_the_tool_itself_refuses_is_refused_and_blamed(tmp_path: Path) -> None:
    _, (drifted,) = _run(_scenario(tmp_path), ReadThenWrite(write="hold_checked"))
    assert _faults(drifted) == [("refused", True)]
    assert drifted.status == "failed" and drifted.root_cause == "wrote_on_stale_read"
    assert "not enough stock" in (drifted.error or "")


def test_overwriting_the_drifted_field_is_a_lost_update(tmp_path: Path) -> None:
    point = "table: stock, row: {sku: '{sku}'}, field: owner, set: partner"
    _, (drifted,) = _run(_scenario(tmp_path, point), ReadThenWrite(write="take_over"))
    assert drifted.root_cause == "lost_update"
    assert drifted.trajectory.faults[0].detail["lost_update"] is True


def test_409_refuses_the_stale_write_and_a_re_reading_agent_recovers(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, SET_SILENT + ", conflict: 409")
    naive = ReadThenWrite()
    _, (failed,) = _run(scenario, naive)
    assert failed.status == "failed" and failed.root_cause == "wrote_on_stale_read"
    assert _faults(failed) == [("conflict", True)]
    (error,) = naive.errors
    assert error.status == 409 and not error.retryable
    body = json.loads(str(error))
    assert body["error"] == "conflict" and body["current"] == {"sku": "S-1", "available": 0}
    # Nothing was written: the service refused it.
    assert not any(s.tool == "hold" and s.result_class == "ok" for s in failed.trajectory.steps)

    careful = ReadThenWrite(reread=True)
    _, (recovered,) = _run(scenario, careful)
    assert _faults(recovered) == [("conflict", True), ("reread", True)]
    assert recovered.answer == "out of stock (0), was 8"
    # The plain `-p drift:conflict=silent` override lets the same write through.
    _, (silent,) = _run(scenario, ReadThenWrite(), "drift:conflict=silent")
    assert _faults(silent) == [("stale_write", True)]


@pytest.mark.parametrize(
    ("rule", "check"),
    [
        ("add: [-7, -5]", lambda new: new in (1, 2, 3)),
        ("one_of: [1, 2]", lambda new: new in (1, 2)),
    ],
)
def test_drawn_rules_are_seeded(tmp_path: Path, rule: str, check: Any) -> None:
    scenario = _scenario(
        tmp_path, f"table: stock, row: {{sku: '{{sku}}'}}, field: available, {rule}"
    )
    _, drifted = _run(scenario, ReadThenWrite(), trials=4, seed=3)
    news = [r.trajectory.faults[0].detail["new"] for r in drifted]
    assert all(check(n) for n in news) and all(
        r.root_cause == "wrote_on_stale_read" for r in drifted
    )
    _, again = _run(scenario, ReadThenWrite(), trials=4, seed=3)
    assert [r.trajectory.faults[0].detail["new"] for r in again] == news


def test_after_seconds_fires_on_the_trial_clock(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, SET_SILENT + ", after_seconds: 30")
    _, (late,) = _run(scenario, ReadThenWrite(wait=45))
    assert _faults(late) == [("stale_write", True)]
    _, (quick,) = _run(scenario, ReadThenWrite(wait=5))
    assert quick.status == "passed" and quick.trajectory.faults == []


class NeverSleeps:
    """Reads the stock and writes at once: its time goes only to the tools (an injected
    latency), never to a wait of its own."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        seen = await episode.tools.call("check_stock", sku="S-1")
        await episode.tools.call("hold", sku="S-1", qty=3)
        return AgentOutput(answer=f"held, saw {seen['available']}")


SLOW = "latency:distribution=uniform,mean=4,jitter=0"  # every call takes 4 s of the clock


@pytest.mark.parametrize("stack", [f"drift+{SLOW}", f"{SLOW}+drift"])
def test_after_seconds_fires_when_the_clock_passes_it_however_the_time_went(
    tmp_path: Path, stack: str
) -> None:
    """With an agent that never sleeps, the clock moves only in slow tool calls: a point due
    at 3 s has changed the row by the time the first read (4 s in) reaches the service, and
    one due at 7 s by the time the write (8 s in) does, whichever way the plugins stack."""
    kinds = lambda r: [k for k, _ in _faults(r) if k != "latency"]  # noqa: E731
    early = _scenario(tmp_path, SET_SILENT + ", after_seconds: 3")
    _, (read_late,) = _run(early, NeverSleeps(), stack)
    assert read_late.answer == "held, saw 0"  # the drifted world; its old value never read
    assert read_late.status == "passed" and kinds(read_late) == []
    later = _scenario(tmp_path, SET_SILENT + ", after_seconds: 7")
    _, (wrote_late,) = _run(later, NeverSleeps(), stack)
    assert wrote_late.answer == "held, saw 8" and kinds(wrote_late) == ["stale_write"]
    assert wrote_late.status == "failed" and wrote_late.root_cause == "wrote_on_stale_read"
    refusing = _scenario(tmp_path, SET_SILENT + ", after_seconds: 7, conflict: 409")
    _, (conflict,) = _run(refusing, NeverSleeps(), stack)
    assert kinds(conflict) == ["conflict"]  # the service's 409, and no 'refused' besides


def test_after_reads_counts_the_reads_of_the_row(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, SET_SILENT + ", after_reads: 2")
    _, (once,) = _run(scenario, ReadThenWrite())  # one read: the drift never fires
    assert once.status == "passed" and once.trajectory.faults == []


def test_a_point_the_agent_never_meets_did_not_land(tmp_path: Path) -> None:
    class WritesBlind:
        clock = "virtual"

        async def run(self, episode: Episode) -> AgentOutput:
            await episode.tools.call("hold", sku="S-1", qty=3)  # never read the row
            return AgentOutput(answer="held")

    records = run(
        RunConfig(
            scenarios=[_scenario(tmp_path)],
            agent=WritesBlind(),
            agent_name="blind",
            cells=parse_cells(["drift"]),
            trials=2,
            references=False,
        )
    ).records
    assert all(r.status == "passed" and not r.trajectory.faults for r in records)
    _, drifted = by_cell(records, [1])
    assert drifted.not_landed == ["drift-test"]
    assert "no fault reached the agent" in (drifted.landing_note() or "")


@pytest.mark.parametrize(
    ("point", "line", "message"),
    [
        (
            "table: stok, row: {sku: '{sku}'}, field: available, set: 0",
            33,
            "no table named 'stok'; did you mean 'stock'",
        ),
        (
            "table: stock, row: {sku: '{sku}'}, field: availble, set: 0",
            33,
            "has no column 'availble'; did you mean 'available'",
        ),
        (
            "table: stock, row: {sku: S-9}, field: available, set: 0",
            33,
            "matches 0 rows of 'stock'",
        ),
        ("table: holds, row: {hold_id: H-1}, field: qty, set: 0", 33, "'holds' has no rows"),
        (
            "table: stock, row: {sku: '{sku}'}, field: available, set: 0, add: 1",
            33,
            "exactly one rule",
        ),
    ],
)
def test_lint_names_the_line_and_the_fix(
    tmp_path: Path, point: str, line: int, message: str
) -> None:
    with pytest.raises(ScenarioError) as info:
        _scenario(tmp_path, point)
    text = str(info.value)
    assert f"drift.yaml:{line}: drift[0]" in text and message in text


def test_a_point_no_tool_reads_is_an_error(tmp_path: Path) -> None:
    doc = DOC.replace("  check_stock: {kind: lookup, table: stock, key: sku}\n", "").replace(
        '    - {id: s, call: check_stock, args: {sku: "{sku}"}}\n', ""
    )
    path = tmp_path / "drift.yaml"
    path.write_text(doc.replace("{POINT}", "{" + SET_SILENT + "}"))
    with pytest.raises(
        ScenarioError,
        match=r"drift.yaml:\d+: drift\[0\]: no tool reads stock.available.*add a lookup or list",
    ):
        load_paths([path])


def _seat_scenario() -> Scenario:
    @tool()
    def get_seat(world: Any, seat: str) -> dict[str, Any]:
        """A seat and who holds it."""
        return world.get("seats", "seat", seat)

    @tool(writes=["seats"])
    def take_seat(world: Any, seat: str) -> dict[str, Any]:
        """Hold a seat for the customer."""
        return world.update("seats", "seat", seat, holder="customer")

    async def solve(actor: Any) -> AgentOutput:
        await actor.call("get_seat", seat="12A")
        await actor.call("take_seat", seat="12A")
        return actor.answer("12A is yours")

    return Scenario(
        id="py-drift",
        description="a seat taken under the agent",
        domain="travel",
        instruction="Hold seat 12A",
        tables={"seats": [{"seat": "12A", "holder": None}]},
        tools=[get_seat, take_seat],
        checks=[
            Check(
                name="held",
                fn=lambda w, o, t: w.get("seats", "seat", "12A")["holder"] == "customer",
            )
        ],
        drift=[DriftPoint(table="seats", row={"seat": "12A"}, field="holder", set="someone")],
        solution=solve,
        reference_steps=2,
    )


def test_python_scenarios_declare_drift_points_through_the_api() -> None:
    scenario = _seat_scenario()
    clean, (drifted,) = _run(scenario, load_agent("scripted"))
    assert clean[0].status == "passed"
    assert drifted.root_cause == "lost_update" and _faults(drifted) == [("stale_write", True)]
    with pytest.raises(ValueError, match="exactly one rule"):
        DriftPoint(table="seats", row={"seat": "12A"}, field="holder")


def test_resilient_reads_again_before_writing_and_naive_does_not() -> None:
    scenarios = select(installed(), ["drift-*"])
    assert len(scenarios) >= 10
    rates = {}
    for name in ("naive", "resilient"):
        records = run(
            RunConfig(
                scenarios=scenarios,
                agent=load_agent(name),
                agent_name=name,
                cells=parse_cells(["drift"]),
                trials=2,
                seed=7,
            )
        ).records
        drifted = [r for r in records if r.cell == "drift"]
        assert all(r.status != "not_evaluable" for r in records)
        rates[name] = sum(r.status == "passed" for r in drifted) / len(drifted)
        if name == "naive":
            causes = {r.root_cause for r in drifted if r.status == "failed"}
            assert {"wrote_on_stale_read", "lost_update"} <= causes
        else:
            kinds = {f.kind for r in drifted for f in r.trajectory.faults if f.delivered}
            assert "reread" in kinds  # it read the changed row before writing
    assert rates["naive"] < 0.2 and rates["resilient"] > 0.7, rates


def test_search_offers_drift_only_where_a_scenario_declares_points() -> None:
    from chaoseval.investigate.schedules import searchable_plugins

    by_id = {s.id: s for s in select(installed(), ["drift-reserve-stock-drop", "vending-*"])}
    drift_task, vending = by_id["drift-reserve-stock-drop"], by_id["vending-refund-dispensed"]
    assert "drift" in searchable_plugins(drift_task, ["drift", "latency"])
    assert "drift" not in searchable_plugins(vending, ["drift", "latency"])


def test_lint_canaries_the_drift_points_of_a_python_scenario() -> None:
    from chaoseval.authoring.lint import lint_scenario

    report = lint_scenario(_seat_scenario(), seeds=(0,), trials=1)
    reach = next(f for f in report.findings if f.check == "reachable")
    assert reach.ok and not reach.skipped
    assert any(d.startswith("drift:") and "stale_write" in d for d in reach.details)
