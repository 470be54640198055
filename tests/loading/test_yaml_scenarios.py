"""YAML scenarios: the bundled ones load and are solved by the reference; the declarative parts
(generated tables, tools, path expressions, plan) behave as documented."""

from __future__ import annotations

import textwrap
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ToolError, ToolHTTPError
from chaoseval.loading.files import installed, load_paths
from chaoseval.loading.yamlform import YamlScenario
from chaoseval.loading.yamlform.expressions import Env, evaluate, parse_expr
from chaoseval.loading.yamlform.nodes import Node
from chaoseval.model.clock import VirtualClock
from chaoseval.model.world import World
from chaoseval.seams.agent import load_agent

BUNDLED = Path(__file__).resolve().parents[2] / "scenarios"


def yaml_bundled() -> list[YamlScenario]:
    files = sorted([*BUNDLED.glob("*.yaml"), *BUNDLED.glob("*.yml")])
    return [s for s in load_paths(files) if isinstance(s, YamlScenario)]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def world_for(scenario, seed: int = 0) -> World:
    tables, givens = scenario.build(seed)
    import copy

    return World(
        tables=copy.deepcopy(tables),
        clock=VirtualClock(datetime(2026, 3, 16, 10, 0)),
        seed=seed,
        tmpdir=Path("."),
        givens=givens,
    )


def test_at_least_three_bundled_yaml_scenarios_load_and_are_installed():
    ids = {s.id for s in yaml_bundled()}
    assert len(ids) >= 3
    assert ids <= {s.id for s in installed()}  # the bundled pack picks YAML up too


@pytest.mark.parametrize("seed", [0, 5, 11])
def test_scripted_agent_passes_every_bundled_yaml_scenario(seed):
    scenarios = yaml_bundled()
    records = run(
        RunConfig(
            scenarios=scenarios,
            agent=load_agent("scripted"),
            agent_name="scripted",
            trials=2,
            seed=seed,
            journal=None,
        )
    ).records
    failed = [
        (r.trial_id, r.root_cause, r.error, r.checks) for r in records if r.status != "passed"
    ]
    assert not failed
    assert len(records) == 2 * len(scenarios)


def test_naive_agent_is_not_perfect_on_yaml_scenarios():
    # The compiled plan goes through the Actor API, so the simulated policy's slips apply.
    records = run(
        RunConfig(
            scenarios=yaml_bundled(),
            agent=load_agent("naive"),
            agent_name="naive",
            trials=6,
            seed=3,
            journal=None,
        )
    ).records
    statuses = {r.status for r in records}
    assert statuses == {"passed", "failed"}


def test_generated_world_depends_on_the_seed_only():
    s = next(s for s in yaml_bundled() if s.id == "library-renew-loan")
    assert s.build(7) == s.build(7)
    assert s.build(7) != s.build(8)
    tables, givens = s.build(7)
    loan = next(r for r in tables["loans"] if r["loan_id"] == givens["loan_id"])
    assert loan["status"] == "open"  # the target row honours its `where`
    members = {m["member_id"] for m in tables["members"]}
    assert all(r["member_id"] in members for r in tables["loans"])  # `from:` references
    assert len({r["loan_id"] for r in tables["loans"]}) == len(tables["loans"])  # `key:` unique


SHOP = """\
id: shop-test
description: test
domain: shop
instruction: "Order {order_id}"
tables:
  staff: [{staff_id: S1, admin: true}, {staff_id: S2, admin: false}]
  orders:
    - {order_id: A-1, status: pending, qty: 2, owner: S1}
    - {order_id: A-2, status: shipped, qty: 1, owner: S2}
  notes: []
givens: {order_id: A-1, down: false}
tools:
  get_order: {kind: lookup, table: orders, key: order_id}
  find_orders: {kind: list, table: orders, filters: [status]}
  bump:
    kind: update
    table: orders
    key: order_id
    args: {staff_id: str}
    increment: {qty: 1}
    permissions:
      - check: "tables.staff[staff_id={staff_id}].admin == true"
        error: "permission denied: {staff_id} is not an admin"
    requires:
      - check: "row.status == pending"
        error: "order {order_id} is {status}"
  add_note:
    kind: create
    table: notes
    args: {order_id: str, text: str}
    id: {column: note_id, prefix: NT}
    unique: [order_id]
    errors:
      - {when: "givens.down == true", status: 503, retry_after: 3, error: "notes are down"}
  drop: {kind: delete, table: orders, key: order_id}
checks:
  - expect: "tables.orders[order_id={order_id}].qty == 3"
solution:
  steps:
    - {id: o, call: get_order, args: {order_id: "{order_id}"}}
    - {call: bump, args: {order_id: $o.order_id, staff_id: S1}}
  answer: "bumped $o.order_id"
"""


@pytest.fixture
def shop(tmp_path):
    (s,) = load_paths([write(tmp_path, "shop.yaml", SHOP)])
    return s


def test_declarative_tools_do_what_they_declare(shop):
    world = world_for(shop)
    tool = {t.name: t.fn for t in shop.tools}
    assert tool["get_order"](world, order_id="A-2")["status"] == "shipped"
    with pytest.raises(ToolError, match="not found"):
        tool["get_order"](world, order_id="A-9")
    assert tool["find_orders"](world, status="pending")["count"] == 1
    assert tool["find_orders"](world, status=None)["count"] == 2
    with pytest.raises(ToolError, match="permission denied: S2 is not an admin"):
        tool["bump"](world, order_id="A-1", staff_id="S2")
    with pytest.raises(ToolError, match="order A-2 is shipped"):
        tool["bump"](world, order_id="A-2", staff_id="S1")
    assert tool["bump"](world, order_id="A-1", staff_id="S1")["qty"] == 3
    note = tool["add_note"](world, order_id="A-1", text="hi")
    assert note["note_id"].startswith("NT-")
    with pytest.raises(ToolError, match="already exists"):
        tool["add_note"](world, order_id="A-1", text="again")
    world.givens["down"] = True
    with pytest.raises(ToolHTTPError) as exc:
        tool["add_note"](world, order_id="A-2", text="x")
    assert exc.value.status == 503 and exc.value.retry_after == 3
    tool["drop"](world, order_id="A-2")
    assert [w.op for w in world.writes] == ["update", "insert", "delete"]
    writes = {t.name: t.writes for t in shop.tools}
    assert writes["get_order"] == () and writes["bump"] == ("orders",)


def test_tool_argument_and_result_schemas_come_from_the_tables(shop):
    spec = next(t for t in shop.tools if t.name == "get_order")
    assert spec.params_schema()["required"] == ["order_id"]
    ret = spec.returns_schema()
    assert ret is not None and ret["properties"]["qty"]["type"] == "integer"


def test_scripted_agent_solves_the_shop_and_the_check_sees_the_write(shop):
    records = run(
        RunConfig(
            scenarios=[shop],
            agent=load_agent("scripted"),
            agent_name="scripted",
            trials=1,
            journal=None,
        )
    ).records
    assert records[0].status == "passed", records[0]
    assert records[0].answer == "bumped A-1"


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("tables.orders[order_id=A-1].status == pending", True),
        ("tables.orders[order_id={order_id}].qty >= 2", True),
        ("tables.orders[status=shipped,owner=S2].qty == 1", True),
        ("count(tables.orders[status=pending]) == 1", True),
        ("exists(tables.orders[order_id=A-9])", False),
        ("tables.orders[order_id=A-9].status == pending", False),
        ("tables.orders.order_id contains A-2", True),
        ("tables.orders[0].order_id == A-1", True),
        ("givens.order_id in [A-1, A-3]", True),
        ("givens.order_id not in [A-1, A-3]", False),
        ("answer matches A-\\d", True),
        ("tables.orders[order_id=A-1].status != shipped", True),
    ],
)
def test_path_expressions(shop, expr, expected):
    world = world_for(shop)
    env = Env(tables=world.tables, givens=world.givens, answer="about A-1")
    parsed = parse_expr(Node("t.yaml", expr, ("expect",), 1))
    assert evaluate(parsed, env)[0] is expected


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries({"k": st.sampled_from(["a", "b", "c"]), "n": st.integers(0, 5)}),
        max_size=12,
    ),
    key=st.sampled_from(["a", "b", "c"]),
)
def test_count_of_a_selection_matches_python(rows, key):
    expr = parse_expr(Node("t.yaml", f"count(tables.t[k={key}])", (), 1))
    env = Env(tables={"t": rows})
    from chaoseval.loading.yamlform.expressions import resolve

    assert resolve(expr.left, env) == sum(1 for r in rows if r["k"] == key)


PLUGINS = '''
from chaoseval.loading.yamlform import custom_tool, verifier


@custom_tool("double_it")
def double_it(factor: int = 2):
    def double(world, x: int) -> dict:
        """Multiply x."""
        world.insert("results", {"id": x, "value": x * factor})
        return {"value": x * factor}
    return double


@verifier("result_is")
def result_is(value: int):
    def check(world, output, trajectory):
        rows = world.table("results")
        return bool(rows) and rows[-1]["value"] == value, f"results: {rows}"
    return check


def plain_check(world, output, trajectory):
    return "done" in output.answer
'''


def test_python_form_custom_tool_and_verifier_by_module_function(tmp_path, monkeypatch):
    (tmp_path / "my_ext.py").write_text(PLUGINS)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(
        tmp_path,
        "ext.yaml",
        """\
        id: ext-test
        description: custom code by reference
        instruction: "Double 21"
        tables: {results: []}
        tools:
          double: {kind: python, function: "my_ext:double_it", with: {factor: 2}}
        checks:
          - {name: value, function: "my_ext:result_is", with: {value: 42}}
          - {name: said done, function: "my_ext:plain_check"}
        solution:
          steps: [{call: double, args: {x: 21}}]
          answer: done
        """,
    )
    (s,) = load_paths([path])
    assert s.tool("double").params_schema()["required"] == ["x"]
    records = run(
        RunConfig(scenarios=[s], agent=load_agent("scripted"), agent_name="scripted", trials=1)
    ).records
    assert records[0].status == "passed", records[0]


def test_several_scenarios_per_file_with_merge_keys(tmp_path):
    base = textwrap.indent(SHOP, "  ").replace("  id: shop-test", "- &base\n  id: shop-test", 1)
    text = base + "- <<: *base\n  id: shop-variant\n  givens: {order_id: A-2, down: false}\n"
    found = load_paths([write(tmp_path, "two.yaml", text)])
    assert [s.id for s in found] == ["shop-test", "shop-variant"]
    assert found[1].build(0)[1]["order_id"] == "A-2"
    assert found[1].tool("bump") is not None  # inherited through the merge


def test_memory_and_ui_page_reach_the_plan(tmp_path):
    path = write(
        tmp_path,
        "mem.yaml",
        """\
        id: mem-ui-test
        description: re-check a remembered order instead of trusting memory
        instruction: "Confirm order {order_id}"
        difficulty: 0
        tables: {orders: [{order_id: A-1, street: New Road}]}
        givens: {order_id: A-1}
        memory: [{key: order, value: {order_id: A-1, street: Old Lane}}]
        ui: "<h1>Order {order_id}</h1>"
        tools:
          get_order: {kind: lookup, table: orders, key: order_id}
        checks:
          - {name: looked it up, called: get_order}
          - {name: current street, answer_contains: New Road}
        solution:
          steps:
            - {id: page, page: true}
            - {id: o, call: get_order, args: {order_id: "{order_id}"}, recall: order}
          answer: "Order $o.order_id ships to $o.street"
        """,
    )
    (s,) = load_paths([path])
    assert s.memory[0].value["street"] == "Old Lane" and s.ui is not None

    def first(agent: str):
        config = RunConfig(scenarios=[s], agent=load_agent(agent), agent_name=agent, trials=1)
        return run(config).records[0]

    scripted, naive = first("scripted"), first("naive")
    assert scripted.status == "passed", scripted
    assert any(step.kind == "observation" for step in scripted.trajectory.steps)
    # The naive harness trusts its memory (no lookup), so the YAML plan's `recall` exposes it.
    assert naive.status == "failed" and naive.answer == "Order A-1 ships to Old Lane"
