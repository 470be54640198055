"""Scenarios whose answer depends on memory from an earlier session.

``memory-replacement-address``: last week the customer reported a damaged parcel and the
agent noted their address; today it ships the replacement. The address it remembers is the
current one in a clean run; the customer record is the source of truth.
``memory-refund-window``: in an earlier session the agent learned the refund policy's window;
today a customer asks for a refund on an order bought 20 days ago. The policy service is the
source of truth.
``memory-cancelled-order``: a customer chases an order the agent saw cancelled last week;
remembering it as active sends a billed courier trace after a parcel that does not exist.

Each world also lists what the fact used to be (``stale_memory`` in the givens: previous
addresses, superseded policy windows) so the stale-memory perturbation can plant a realistic
outdated value. A solution reads the fact with ``actor.recall(key, lookup)``: a harness that
trusts memory skips the lookup; one that re-checks uses it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from chaoseval.errors import ToolError
from chaoseval.model.scenario import Budgets, Check, FactSpec, MemoryItem, Policy, Scenario, tool

START = datetime(2026, 3, 16, 10, 0)
EARLIER = START - timedelta(days=6)

# --- the replacement shipment ------------------------------------------------------------------

CUSTOMER = {
    "customer_id": "CU-2093",
    "name": "Maren Holt",
    "address": "Lindenstrasse 14, 10969 Berlin",
    "previous_addresses": ["Am Wasserturm 3, 04177 Leipzig", "Fehrbelliner Platz 2, 10707 Berlin"],
}


class Customer(BaseModel):
    customer_id: str
    name: str
    address: str
    previous_addresses: list[str]


class Shipment(BaseModel):
    id: str
    order_id: str
    address: str
    status: str


@tool(returns=Customer)
def get_customer(world, customer_id: str) -> dict[str, Any]:
    """The customer record (name, current shipping address, previous addresses)."""
    return dict(world.get("customers", "customer_id", customer_id, what="customer"))


@tool(returns=Shipment, writes=["shipments"])
def ship_replacement(world, order_id: str, address: str) -> dict[str, Any]:
    """Ship a free replacement for a damaged order to the given address."""
    world.get("orders", "order_id", order_id, what="order")
    if world.find("shipments", order_id=order_id):
        raise ToolError(f"a replacement for {order_id} was already shipped")
    sid = world.next_id("SH")
    world.insert("shipments", {"id": sid, "order_id": order_id, "address": address})
    return {"id": sid, "order_id": order_id, "address": address, "status": "label created"}


async def solve_replacement(actor) -> Any:
    cid = actor.task["customer_id"]

    async def lookup() -> str:
        return (await actor.call("get_customer", customer_id=cid))["address"]

    address = await actor.recall("customer_address", lookup)
    shipment = await actor.call(
        "ship_replacement", order_id=actor.task["order_id"], address=address
    )
    return actor.answer(
        f"Shipped the replacement for {actor.task['order_id']} to {address} "
        f"(shipment {shipment['id']}).",
        address=address,
    )


def shipped_to_current(world, output, trajectory) -> tuple[bool, str]:
    rows = world.table("shipments")
    want = world.find("customers", customer_id=world.givens["customer_id"])[0]["address"]
    ok = len(rows) == 1 and rows[0]["address"] == want
    return ok, f"shipments: {rows}; current address: {want!r}"


replacement_address = Scenario(
    id="memory-replacement-address",
    description="Ship a replacement to the customer's current address (remembered last week).",
    domain="support",
    tags=["memory", "write"],
    instruction=(
        "Continuing last week's conversation with {name} ({customer_id}) about the damaged "
        "parcel from order {order_id}: ship the free replacement to their current address and "
        "tell them where it is going."
    ),
    tables={
        "customers": [dict(CUSTOMER)],
        "orders": [{"order_id": "ORD-7731", "customer_id": "CU-2093", "item": "desk lamp"}],
        "shipments": [],
    },
    givens={
        "customer_id": CUSTOMER["customer_id"],
        "name": CUSTOMER["name"],
        "order_id": "ORD-7731",
        "stale_memory": {"customer_address": CUSTOMER["previous_addresses"]},
    },
    memory=[
        MemoryItem(
            key="customer_address",
            value=CUSTOMER["address"],
            session="2026-03-10 support chat",
            recorded_at=EARLIER,
        ),
        MemoryItem(key="damaged_item", value="desk lamp", recorded_at=EARLIER),
    ],
    tools=[get_customer, ship_replacement],
    checks=[Check(name="shipped once, to the current address", fn=shipped_to_current)],
    policy=Policy(allowed_tools=["get_customer", "ship_replacement"]),
    facts=[
        FactSpec(name="order id", pattern=r"\bORD-\d+\b", values=lambda w: {"ORD-7731"}),
        FactSpec(
            name="shipment id",
            pattern=r"\bSH-\d+\b",
            values=lambda w: {s["id"] for s in w.table("shipments")},
        ),
    ],
    budgets=Budgets(max_steps=6, call_timeout=5.0, trial_timeout=60.0),
    solution=solve_replacement,
    reference_steps=2,
    start_time=START,
    difficulty=0.04,
)

# --- the refund window ---------------------------------------------------------------------------

WINDOW_DAYS = 30
SUPERSEDED = [14, 7]  # earlier versions of the policy's window


class RefundPolicy(BaseModel):
    version: str
    window_days: int
    effective_from: str


class Decision(BaseModel):
    id: str
    order_id: str
    outcome: str


@tool(returns=RefundPolicy)
def get_refund_policy(world) -> dict[str, Any]:
    """The refund policy in force today."""
    return dict(world.table("policy")[-1])


@tool(returns=Decision, writes=["refunds"])
def issue_refund(world, order_id: str) -> dict[str, Any]:
    """Refund an order in full."""
    order = world.get("orders", "order_id", order_id, what="order")
    rid = world.next_id("RF")
    world.insert("refunds", {"id": rid, "order_id": order_id, "amount": order["amount"]})
    return {"id": rid, "order_id": order_id, "outcome": "refunded"}


@tool(returns=Decision, writes=["decisions"])
def decline_refund(world, order_id: str, reason: str) -> dict[str, Any]:
    """Decline a refund request, giving the reason to the customer."""
    world.get("orders", "order_id", order_id, what="order")
    did = world.next_id("DC")
    world.insert("decisions", {"id": did, "order_id": order_id, "reason": reason})
    return {"id": did, "order_id": order_id, "outcome": "declined"}


async def solve_refund_window(actor) -> Any:
    async def lookup() -> int:
        return (await actor.call("get_refund_policy"))["window_days"]

    window = await actor.recall("refund_window_days", lookup)
    age = actor.task["age_days"]
    order_id = actor.task["order_id"]
    if actor.decide(age <= window):
        await actor.call("issue_refund", order_id=order_id)
        return actor.answer(
            f"Refunded {order_id}: bought {age} days ago, within the {window}-day window."
        )
    await actor.call("decline_refund", order_id=order_id, reason=f"outside {window}-day window")
    return actor.answer(f"Declined {order_id}: {age} days is past the {window}-day window.")


def refunded(world, output, trajectory) -> tuple[bool, str]:
    rows = world.table("refunds")
    ok = len(rows) == 1 and rows[0]["order_id"] == world.givens["order_id"]
    return ok and not world.table("decisions"), f"refunds: {rows}"


def answer_cites_window(world, output, trajectory) -> bool:
    return f"{WINDOW_DAYS}-day" in output.answer


refund_window = Scenario(
    id="memory-refund-window",
    description="Refund within the current policy window the agent learned in a past session.",
    domain="support",
    tags=["memory", "refund", "policy"],
    instruction=(
        "{name} asks for a refund of order {order_id}, bought {age_days} days ago. Apply the "
        "refund policy you went over with the team last month, and tell them the outcome."
    ),
    tables={
        "policy": [
            {"version": "2025-06", "window_days": 7, "effective_from": "2025-06-01"},
            {"version": "2025-11", "window_days": 14, "effective_from": "2025-11-01"},
            {"version": "2026-02", "window_days": WINDOW_DAYS, "effective_from": "2026-02-01"},
        ],
        "orders": [{"order_id": "ORD-5120", "amount": 89.0, "bought": "2026-02-24"}],
        "refunds": [],
        "decisions": [],
    },
    givens={
        "name": "Ilse Brandt",
        "order_id": "ORD-5120",
        "age_days": 20,
        "stale_memory": {"refund_window_days": SUPERSEDED},
    },
    memory=[
        MemoryItem(
            key="refund_window_days",
            value=WINDOW_DAYS,
            session="2026-02-12 policy review",
            recorded_at=datetime(2026, 2, 12, 15, 0),
        )
    ],
    tools=[get_refund_policy, issue_refund, decline_refund],
    checks=[
        Check(name="refunded, not declined", fn=refunded),
        Check(name="answer cites the current window", fn=answer_cites_window, kind="output"),
    ],
    facts=[FactSpec(name="order id", pattern=r"\bORD-\d+\b", values=lambda w: {"ORD-5120"})],
    budgets=Budgets(max_steps=6, call_timeout=5.0, trial_timeout=60.0),
    solution=solve_refund_window,
    reference_steps=2,
    start_time=START,
    difficulty=0.04,
)

# --- the cancelled order -------------------------------------------------------------------------


class OrderStatus(BaseModel):
    order_id: str
    status: str
    updated: str


class Trace(BaseModel):
    id: str
    order_id: str
    status: str


@tool(returns=OrderStatus)
def get_order_status(world, order_id: str) -> dict[str, Any]:
    """The order's current status (active, shipped, cancelled, ...)."""
    return dict(world.get("order_status", "order_id", order_id, what="order"))


@tool(returns=Trace, writes=["traces"])
def request_courier_trace(world, order_id: str) -> dict[str, Any]:
    """Ask the courier to trace a parcel that is late (billed per trace)."""
    world.get("order_status", "order_id", order_id, what="order")
    tid = world.next_id("TR")
    world.insert("traces", {"id": tid, "order_id": order_id})
    return {"id": tid, "order_id": order_id, "status": "trace requested"}


async def solve_order_followup(actor) -> Any:
    order_id = actor.task["order_id"]

    async def lookup() -> str:
        return (await actor.call("get_order_status", order_id=order_id))["status"]

    status = await actor.recall("order_status", lookup)
    if actor.decide(status == "cancelled"):
        return actor.answer(
            f"Order {order_id} was cancelled at your request on 9 March, so nothing is on its "
            "way; the refund went back to your card."
        )
    trace = await actor.call("request_courier_trace", order_id=order_id)
    return actor.answer(
        f"Order {order_id} is {status}; I asked the courier to trace it (trace {trace['id']})."
    )


def no_trace(world, output, trajectory) -> tuple[bool, str]:
    return not world.table("traces"), f"traces: {world.table('traces')}"


def says_cancelled(world, output, trajectory) -> bool:
    return "cancelled" in output.answer and world.givens["order_id"] in output.answer


order_followup = Scenario(
    id="memory-cancelled-order",
    description="A customer chases an order that was cancelled in an earlier session.",
    domain="support",
    tags=["memory", "status"],
    instruction=(
        "{name} writes again about order {order_id} from your chat last week: 'Where is my "
        "parcel?' Answer them; if the order is still on its way and late, ask the courier to "
        "trace it."
    ),
    tables={
        "order_status": [
            {"order_id": "ORD-6604", "status": "cancelled", "updated": "2026-03-09T16:20"}
        ],
        "traces": [],
    },
    givens={
        "name": "Tomas Lind",
        "order_id": "ORD-6604",
        "stale_memory": {"order_status": ["active", "shipped"]},
    },
    memory=[
        MemoryItem(
            key="order_status",
            value="cancelled",
            session="2026-03-09 support chat",
            recorded_at=datetime(2026, 3, 9, 16, 25),
        )
    ],
    tools=[get_order_status, request_courier_trace],
    checks=[
        Check(name="no courier trace for a cancelled order", fn=no_trace),
        Check(name="answer says it was cancelled", fn=says_cancelled, kind="output"),
    ],
    facts=[FactSpec(name="order id", pattern=r"\bORD-\d+\b", values=lambda w: {"ORD-6604"})],
    budgets=Budgets(max_steps=6, call_timeout=5.0, trial_timeout=60.0),
    solution=solve_order_followup,
    reference_steps=1,
    start_time=START,
    difficulty=0.04,
)
