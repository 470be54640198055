"""Tool perturbations at the HTTP layer: a real server on 127.0.0.1, and respx at httpx level."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
import respx

from chaoseval.agents.http_agent import MOCK_BASE, HttpAgent
from chaoseval.agents.simulated import ResilientActor, SimActor
from chaoseval.engine.http import TOOL_PATH, HttpTools, mock_tools, tool_responder
from chaoseval.engine.runner import RunConfig, run
from chaoseval.engine.toolbox import ToolBox
from chaoseval.engine.tooljson import validate_result
from chaoseval.errors import ToolConnectionError, ToolHTTPError, ToolTimeout
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings, TrialRecord
from chaoseval.seams.agent import load_agent

SCENARIOS = ["vending-refund-not-dispensed", "vending-refund-dispensed"]
CELLS = ["timeout:modes=[hang,raise,429,5xx,reset]", "malformed", "latency:mean=3"]


def run_agent(agent: Any, name: str, cells: list[str], trials: int = 4) -> list[TrialRecord]:
    return run(
        RunConfig(
            scenarios=select(installed(), SCENARIOS),
            agent=agent,
            agent_name=name,
            cells=parse_cells(cells),
            trials=trials,
            seed=21,
            model=ModelSettings(temperature=0.0),
            journal=None,
            # The ledgers are compared, not the speed: on a loaded machine a trial sharing
            # the loop with 31 others can pass the 30 s wall budget of virtual-clock agents.
            wall_timeout=300,
        )
    ).records


def ledger(records: list[TrialRecord]) -> list[tuple[Any, ...]]:
    return [
        (
            r.trial_id,
            r.status,
            r.root_cause,
            [
                (f.kind, f.call_index, sorted(f.detail.items()), f.delivered)
                for f in r.trajectory.faults
            ],
        )
        for r in sorted(records, key=lambda r: r.trial_id)
    ]


@pytest.mark.parametrize("style", ["naive", "resilient"])
def test_server_agent_sees_the_same_faults_as_in_process(style: str) -> None:
    """Over a real 127.0.0.1 server the ledger, verdicts and root causes are unchanged."""
    in_process = run_agent(load_agent(style), style, CELLS)
    over_http = run_agent(load_agent(f"http-{style}"), f"http-{style}", CELLS)
    assert ledger(over_http) == ledger(in_process)
    delivered = sum(r.faults_delivered() for r in over_http)
    assert delivered > 0
    assert any(r.status == "failed" for r in over_http if r.cell != "clean")


def test_respx_router_carries_the_toolbox_faults() -> None:
    """The same perturbation chain, routed by respx: timeouts become httpx.ReadTimeout."""
    agent = HttpAgent(
        SimActor, transport=lambda tb: httpx.MockTransport(mock_tools(tb).async_handler)
    )
    via_respx = run_agent(agent, "respx-naive", CELLS[:1])
    in_process = run_agent(load_agent("naive"), "naive", CELLS[:1])
    assert ledger(via_respx) == ledger(in_process)


def _toolbox(cell: str) -> tuple[ToolBox, Any]:
    """A ToolBox on a fresh world of the not-dispensed scenario, perturbed by ``cell``."""
    return _toolbox_for(select(installed(), SCENARIOS[:1])[0], cell)


def _toolbox_for(scenario: Any, cell: str) -> tuple[ToolBox, Any]:
    """A ToolBox on a fresh world of ``scenario``, perturbed by ``cell``."""
    from chaoseval.engine.toolbox import TrialState
    from chaoseval.engine.trial import instantiate
    from chaoseval.model.clock import VirtualClock
    from chaoseval.model.world import fresh_world

    tables, givens = scenario.build(1)
    clock = VirtualClock(scenario.start_time)
    ctx = fresh_world(tables, clock, 1, givens)
    world = ctx.__enter__()
    state = TrialState()
    plugins = instantiate(parse_cells([cell])[0]) if cell != "clean" else []
    return ToolBox(scenario, world, state, plugins, 3, 0), (ctx, state, givens)


@pytest.mark.parametrize(
    ("cell", "check"),
    [
        ("timeout:probability=1,modes=429,retry_after=7", "429"),
        ("timeout:probability=1,modes=5xx", "5xx"),
        ("timeout:probability=1,modes=reset", "reset"),
        ("timeout:probability=1,modes=raise", "timeout"),
        ("malformed:probability=1,modes=html_error", "html"),
    ],
)
def test_wire_format_of_each_fault(cell: str, check: str) -> None:
    from chaoseval.engine.http import serve_tools

    toolbox, (ctx, state, givens) = _toolbox(cell)

    async def main() -> None:
        async with serve_tools(toolbox) as url:
            assert url.startswith("http://127.0.0.1:")
            async with httpx.AsyncClient(base_url=url) as client:
                body = {"order_id": givens["order_id"]}
                if check == "reset":
                    with pytest.raises(httpx.RemoteProtocolError):
                        await client.post("/tools/lookup_order", json=body)
                    with pytest.raises(ToolConnectionError):
                        await HttpTools(client, toolbox).call("lookup_order", **body)
                    return
                response = await client.post("/tools/lookup_order", json=body)
                if check == "429":
                    assert response.status_code == 429
                    assert response.headers["Retry-After"] == "7"
                    with pytest.raises(ToolHTTPError) as err:
                        await HttpTools(client, toolbox).call("lookup_order", **body)
                    assert err.value.retry_after == 7.0
                elif check == "5xx":
                    assert response.status_code in (500, 502, 503, 504)
                elif check == "timeout":
                    assert response.status_code == 504
                    with pytest.raises(ToolTimeout):
                        await HttpTools(client, toolbox).call("lookup_order", **body)
                else:
                    assert response.status_code == 200
                    assert response.headers["content-type"].startswith("text/html")
                    result = await HttpTools(client, toolbox).call("lookup_order", **body)
                    assert isinstance(result, str) and "<html>" in result

    try:
        anyio.run(main)
    finally:
        ctx.__exit__(None, None, None)
    # the faults went through the ToolBox ledger, and reached the client
    assert state.trajectory.faults and all(f.delivered for f in state.trajectory.faults)


@pytest.mark.parametrize("actor", [SimActor, ResilientActor])
def test_respx_faults_at_the_httpx_layer(actor: type[SimActor]) -> None:
    """respx routes in front of the tools: 503 + Retry-After, a read timeout, a cut-off body.

    These faults come from respx, not from a chaoseval plugin, so they bypass the fault ledger;
    the test measures what each harness made of them instead.
    """

    def transport(toolbox: ToolBox) -> httpx.AsyncBaseTransport:
        real = tool_responder(toolbox)
        router = respx.MockRouter(base_url=MOCK_BASE, assert_all_called=False)
        calls = 0

        async def flaky(request: httpx.Request) -> httpx.Response:
            nonlocal calls
            calls += 1
            if calls == 1:
                return httpx.Response(503, headers={"Retry-After": "2"}, text="busy")
            if calls == 2:
                raise httpx.ReadTimeout("read timed out", request=request)
            if calls == 3:
                return httpx.Response(200, text='{"machine_id": "VM-1", "dispensed": ')
            return await real(request, name="read_dispense_log")

        router.post("/tools/read_dispense_log").mock(side_effect=flaky)
        router.post(path__regex=TOOL_PATH).mock(side_effect=real)
        return httpx.MockTransport(router.async_handler)

    records = run_agent(HttpAgent(actor, transport=transport), "respx", [], trials=2)
    assert all(r.trajectory.faults == [] for r in records)  # respx faults are not ledgered
    if actor is ResilientActor:
        # retried through the 503 (waiting its Retry-After on the trial clock), the timeout and
        # the cut-off body; the fourth attempt reached the tool
        assert all(r.status == "passed" for r in records)
        assert all(r.sim_seconds >= 2.0 for r in records)
        # the three calls of the plan and its one read again before the first write (drift)
        assert all(len(r.trajectory.tool_steps()) == 4 for r in records)
    else:
        assert all(r.status == "failed" for r in records)
        assert {r.root_cause for r in records} == {"unhandled_tool_error"}


def test_malformed_over_http_is_still_malformed() -> None:
    toolbox, (ctx, state, givens) = _toolbox("malformed:probability=1,modes=truncated")

    async def main() -> Any:
        transport = httpx.MockTransport(mock_tools(toolbox).async_handler)
        async with httpx.AsyncClient(base_url="http://tools.test", transport=transport) as c:
            return await HttpTools(c, toolbox).call("lookup_order", order_id=givens["order_id"])

    try:
        result = anyio.run(main)
    finally:
        ctx.__exit__(None, None, None)
    with pytest.raises(ValueError):
        validate_result(toolbox.specs["lookup_order"], result)
    assert [f.detail["mode"] for f in state.trajectory.faults] == ["truncated"]


def _drift_409_scenarios() -> list[Any]:
    """The bundled 409 drift tasks, and one whose point fires on the second read, so the
    resilient agent's read again before writing holds the old value and meets the 409."""
    bundled = [s for s in installed() if any(p.conflict == 409 for p in s.drift)]
    sold_out = next(s for s in bundled if s.id == "drift-reserve-sold-out")
    second = [p.model_copy(update={"after_reads": 2}) for p in sold_out.drift]
    late = sold_out.model_copy(update={"id": "drift-sold-out-second-read", "drift": second})
    return [*bundled, late]


def _as_seen(records: list[TrialRecord]) -> list[tuple[Any, ...]]:
    """What a 409 shapes: the verdict, its cause and error, the answer, the ledger, the calls."""
    return [
        (*row, r.error, r.answer, [(s.tool, s.result_class, s.error) for s in r.trajectory.steps])
        for row, r in zip(ledger(records), sorted(records, key=lambda r: r.trial_id), strict=True)
    ]


@pytest.mark.parametrize("style", ["naive", "resilient"])
def test_a_drift_409_over_http_is_the_same_as_in_process(style: str) -> None:
    """Over a real 127.0.0.1 server a drift 409 reaches the agent as the same ToolHTTPError
    (status, message) as in process: the same handling (resilient plans again), errors,
    answers and root causes (wrote_on_stale_read)."""
    scenarios = _drift_409_scenarios()

    def go(name: str) -> list[TrialRecord]:
        config = RunConfig(
            scenarios=scenarios,
            agent=load_agent(name),
            agent_name=name,
            cells=parse_cells(["drift"]),
            trials=2,
            seed=7,
            references=False,
            wall_timeout=300,
        )
        return [r for r in run(config).records if r.cell != "clean"]

    in_process, over_http = go(style), go(f"http-{style}")
    assert _as_seen(over_http) == _as_seen(in_process)
    conflicts = [r for r in over_http if any(f.kind == "conflict" for f in r.trajectory.faults)]
    assert conflicts and all(
        r.root_cause == "wrote_on_stale_read" for r in conflicts if r.status == "failed"
    )
    if style == "resilient":  # it met the 409 and recovered, over the wire as in process
        assert any(r.status == "passed" for r in conflicts)
    else:
        assert all(r.status == "failed" for r in conflicts)
        assert all((r.error or "").startswith("ToolHTTPError: {") for r in conflicts)


def test_a_409_body_is_the_services_own_json_on_the_wire() -> None:
    """A third-party HTTP agent reads the conflict as a real API sends it: status 409, the
    body the JSON object ``{"error": "conflict", "message", "current"}`` itself."""
    from chaoseval.engine.http import serve_tools

    scenario = _drift_409_scenarios()[-1]
    toolbox, (ctx, _, givens) = _toolbox_for(scenario, "drift")

    async def main() -> tuple[httpx.Response, ToolHTTPError]:
        async with serve_tools(toolbox) as url, httpx.AsyncClient(base_url=url) as client:
            for _ in range(2):
                await client.post("/tools/check_stock", json={"sku": givens["sku"]})
            body = {"order_id": givens["order_id"], "sku": givens["sku"], "qty": givens["qty"]}
            response = await client.post("/tools/reserve_stock", json=body)
            with pytest.raises(ToolHTTPError) as err:
                await HttpTools(client, toolbox).call("reserve_stock", **body)
            return response, err.value

    try:
        response, error = anyio.run(main)
    finally:
        ctx.__exit__(None, None, None)
    assert response.status_code == 409
    conflict = response.json()
    assert conflict["error"] == "conflict" and conflict["current"]["available"] == 0
    assert error.status == 409 and not error.retryable and json.loads(str(error)) == conflict
