"""More UI and memory scenarios, so the layout, popup and stale-memory perturbations reach
enough tasks for a comparison between harnesses to show a difference.

UI (the page re-renders from the world; clicks go through ``chaoseval.engine.ui.click_tool``):
``ui-ticket-escalate``: in a support console, a ticket past its 24-hour response SLA is
escalated to tier 2 with the console's buttons.
``ui-plan-downgrade``: on an account-settings page, a customer's subscription is moved from Pro
to Basic (pick the plan, save), and the agent reports the new monthly price.

Memory (the answer depends on a fact from an earlier session; ``stale_memory`` in the givens
lists what the fact used to be, so the stale-memory perturbation plants a realistic old value):
``memory-delivery-slot``: book a grocery delivery into the customer's preferred slot, which
they changed since the agent first noted it.
``memory-loyalty-tier``: apply the loyalty discount of the customer's tier, which was
downgraded at the yearly review.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from faker import Faker
from pydantic import BaseModel

from chaoseval.engine.ui import click_tool, set_status
from chaoseval.errors import ToolError
from chaoseval.model.scenario import Budgets, Check, FactSpec, MemoryItem, Policy, Scenario, tool

# --- support console: escalate a ticket past its SLA ------------------------------------------

SLA_HOURS = 24

TICKET_PAGE = """<html><body>
<header><h1>Support console</h1><a id="nav-inbox" href="/inbox">Back to inbox</a></header>
<main>
<h2>Ticket {ticket_id}: {subject}</h2>
<dl><dt>Customer</dt><dd>{customer}</dd><dt>Priority</dt><dd>{priority}</dd>
<dt>Open for</dt><dd>{hours_open} hours</dd>
<dt>Status</dt><dd id="status">{status}</dd></dl>
<div class="actions">
<button id="reply-ticket">Reply to customer</button>
<button id="escalate-ticket">Escalate to tier 2</button>
<button id="close-ticket">Close ticket</button>
</div>
</main></body></html>"""


class Ticket(BaseModel):
    ticket_id: str
    customer: str
    subject: str
    priority: str
    hours_open: int
    status: str


@tool(returns=Ticket)
def get_ticket(world, ticket_id: str) -> dict[str, Any]:
    """Read a support ticket (e.g. TK-40213): subject, priority, hours open and status."""
    return dict(world.get("tickets", "ticket_id", ticket_id, what="ticket"))


def _ticket_to(status: str) -> Any:
    return set_status("tickets", "ticket_id", expect="open", to=status, what="ticket")


def _inbox(world) -> dict[str, Any]:
    return {"action": "navigate", "status": "left the ticket unchanged"}


def ticket_world(fake: Faker) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    subjects = [
        "Invoice charged twice",
        "Cannot log in after password reset",
        "Export to CSV times out",
        "Webhook deliveries failing",
        "Wrong VAT number on invoice",
    ]
    rows = []
    for _ in range(5):
        rows.append(
            {
                "ticket_id": f"TK-{fake.unique.random_int(10000, 99999)}",
                "customer": fake.company(),
                "subject": fake.random_element(subjects),
                "priority": fake.random_element(["normal", "high"]),
                "hours_open": fake.random_int(2, 20),
                "status": "open",
            }
        )
    target = rows[fake.random_int(0, len(rows) - 1)]
    target["hours_open"] = fake.random_int(SLA_HOURS + 2, 72)  # the one past its SLA
    return {"tickets": rows}, dict(target)


async def solve_ticket(actor) -> Any:
    """Read the ticket; past the SLA, escalate it by clicking (else reply); confirm."""
    ticket = await actor.call("get_ticket", ticket_id=actor.task["ticket_id"])
    if actor.decide(ticket["hours_open"] > SLA_HOURS):
        await actor.click("Escalate to tier 2")
        return actor.answer(
            f"Escalated ticket {ticket['ticket_id']} to tier 2: open {ticket['hours_open']} "
            f"hours, past the {SLA_HOURS}-hour response SLA.",
            ticket_id=ticket["ticket_id"],
            decision="escalated",
        )
    await actor.click("Reply to customer")
    return actor.answer(f"Replied on {ticket['ticket_id']}: still within the SLA.")


def ticket_escalated(world, output, trajectory) -> tuple[bool, str]:
    changed = [r for r in world.table("tickets") if r["status"] != "open"]
    ok = len(changed) == 1 and changed[0]["ticket_id"] == world.givens["ticket_id"]
    ok = ok and changed[0]["status"] == "escalated"
    return ok, f"changed: {[(r['ticket_id'], r['status']) for r in changed]}"


def answer_confirms_escalation(world, output, trajectory) -> bool:
    return world.givens["ticket_id"] in output.answer and "scalat" in output.answer


ticket_escalate = Scenario(
    id="ui-ticket-escalate",
    description="Escalate a support ticket past its response SLA by clicking in the console.",
    domain="support-console",
    tags=["ui", "ticket", "write"],
    instruction=(
        "You are signed in to the support console, open on ticket {ticket_id} from "
        f"{{customer}}. If it has been open longer than the {SLA_HOURS}-hour response SLA, "
        "escalate it to tier 2; otherwise reply to the customer. Use the console's buttons, "
        "then confirm what you did."
    ),
    generate=ticket_world,
    ui=TICKET_PAGE,
    tools=[
        get_ticket,
        click_tool(
            {
                "reply-ticket": set_status(
                    "tickets", "ticket_id", expect="open", to="awaiting customer", what="ticket"
                ),
                "escalate-ticket": set_status(
                    "tickets", "ticket_id", expect="open", to="escalated", what="ticket"
                ),
                "close-ticket": set_status(
                    "tickets", "ticket_id", expect="open", to="closed", what="ticket"
                ),
                "nav-inbox": _inbox,
            },
            writes=["tickets"],
        ),
    ],
    checks=[
        Check(name="exactly this ticket escalated", fn=ticket_escalated),
        Check(name="answer confirms the escalation", fn=answer_confirms_escalation, kind="output"),
    ],
    facts=[
        FactSpec(
            name="ticket id",
            pattern=r"\bTK-\d+\b",
            values=lambda w: {r["ticket_id"] for r in w.table("tickets")},
        ),
    ],
    budgets=Budgets(max_steps=8, call_timeout=5.0, trial_timeout=60.0),
    solution=solve_ticket,
    reference_steps=2,
    difficulty=0.012,
)

# --- account settings: downgrade a subscription plan -----------------------------------------

PLANS = {"basic": 9.0, "pro": 29.0, "team": 79.0}

PLAN_PAGE = """<html><body>
<header><h1>Account settings</h1><a id="nav-account" href="/account">Back to account</a></header>
<main>
<h2>Subscription for {account_id} ({customer})</h2>
<p>Current plan: <span id="plan">{plan}</span>. Selected: <span id="selected">{selected}</span>.</p>
<fieldset class="plans">
<button role="radio" id="plan-basic">Basic plan</button>
<button role="radio" id="plan-pro">Pro plan</button>
<button role="radio" id="plan-team">Team plan</button>
</fieldset>
<div class="actions">
<button id="save-plan">Save changes</button>
<button id="cancel-subscription">Cancel subscription</button>
</div>
</main></body></html>"""


class Account(BaseModel):
    account_id: str
    customer: str
    plan: str
    monthly_price: float
    status: str


@tool(returns=Account)
def get_account(world, account_id: str) -> dict[str, Any]:
    """Read a subscription account (e.g. ACC-3310): plan, monthly price and status."""
    return dict(world.get("accounts", "account_id", account_id, what="account"))


def _select(plan: str):
    def action(world) -> dict[str, Any]:
        world.givens["selected"] = plan  # a radio choice is page state until saved
        return {"action": f"select:{plan}", "status": f"{plan} plan selected (not saved)"}

    return action


def _save(world) -> dict[str, Any]:
    aid = world.givens["account_id"]
    account = world.get("accounts", "account_id", aid, what="account")
    if account["status"] != "active":
        raise ToolError(f"account {aid} is {account['status']}")
    plan = world.givens.get("selected", "none")
    if plan not in PLANS:
        raise ToolError("select a plan first")
    world.update("accounts", "account_id", aid, plan=plan, monthly_price=PLANS[plan])
    world.givens["plan"] = plan
    return {
        "action": "save",
        "status": f"plan changed to {plan}, {PLANS[plan]:.2f} EUR per month",
        "ref": aid,
    }


def _cancel(world) -> dict[str, Any]:
    aid = world.givens["account_id"]
    world.update("accounts", "account_id", aid, status="cancelled")
    return {"action": "cancel", "status": f"subscription {aid} cancelled", "ref": aid}


def _account(world) -> dict[str, Any]:
    return {"action": "navigate", "status": "left settings without saving"}


def plan_world(fake: Faker) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    account = {
        "account_id": f"ACC-{fake.unique.random_int(1000, 9999)}",
        "customer": fake.name(),
        "plan": "pro",
        "monthly_price": PLANS["pro"],
        "status": "active",
    }
    return {"accounts": [account]}, {**account, "selected": "pro"}


async def solve_plan(actor) -> Any:
    """Check the account, pick the Basic plan, save, report the new price."""
    account = await actor.call("get_account", account_id=actor.task["account_id"])
    await actor.click("Basic plan", role="radio")
    await actor.click("Save changes")
    return actor.answer(
        f"Moved {account['account_id']} from the Pro to the Basic plan: "
        f"{PLANS['basic']:.2f} EUR per month from the next billing cycle.",
        account_id=account["account_id"],
        plan="basic",
    )


def plan_is_basic(world, output, trajectory) -> tuple[bool, str]:
    account = world.get("accounts", "account_id", world.givens["account_id"], what="account")
    ok = account["plan"] == "basic" and account["status"] == "active"
    return ok, f"account: {account['plan']}, {account['status']}"


def answer_gives_price(world, output, trajectory) -> bool:
    return world.givens["account_id"] in output.answer and f"{PLANS['basic']:.2f}" in output.answer


plan_downgrade = Scenario(
    id="ui-plan-downgrade",
    description="Move a subscription from Pro to Basic on the account-settings page.",
    domain="account-settings",
    tags=["ui", "subscription", "write"],
    instruction=(
        "{customer} wants to downgrade account {account_id} from the Pro plan to the Basic "
        "plan; they do not want to cancel. The account-settings page is open: use its "
        "controls, then tell them the new monthly price."
    ),
    generate=plan_world,
    ui=PLAN_PAGE,
    tools=[
        get_account,
        click_tool(
            {
                "plan-basic": _select("basic"),
                "plan-pro": _select("pro"),
                "plan-team": _select("team"),
                "save-plan": _save,
                "cancel-subscription": _cancel,
                "nav-account": _account,
            },
            writes=["accounts"],
        ),
    ],
    checks=[
        Check(name="on the Basic plan, still active", fn=plan_is_basic),
        Check(name="answer gives the new price", fn=answer_gives_price, kind="output"),
    ],
    facts=[
        FactSpec(
            name="account id",
            pattern=r"\bACC-\d+\b",
            values=lambda w: {a["account_id"] for a in w.table("accounts")},
        ),
    ],
    budgets=Budgets(max_steps=10, call_timeout=5.0, trial_timeout=60.0),
    solution=solve_plan,
    reference_steps=3,
    difficulty=0.05,
)

# --- memory: the preferred delivery slot -------------------------------------------------------

START = datetime(2026, 4, 20, 9, 0)

SHOPPER = {
    "customer_id": "CU-5817",
    "name": "Jonas Weber",
    "preferred_slot": "Sat 08:00-10:00",
}
OLD_SLOTS = ["Thu 18:00-20:00", "Tue 19:00-21:00"]  # what they asked for in earlier sessions
SLOTS = sorted({SHOPPER["preferred_slot"], *OLD_SLOTS, "Fri 12:00-14:00", "Sun 10:00-12:00"})


class Preferences(BaseModel):
    customer_id: str
    name: str
    preferred_slot: str
    updated: str


class Booking(BaseModel):
    id: str
    order_id: str
    slot: str
    status: str


@tool(returns=Preferences)
def get_delivery_preferences(world, customer_id: str) -> dict[str, Any]:
    """The customer's delivery preferences as saved in their profile today."""
    return dict(world.get("preferences", "customer_id", customer_id, what="customer"))


@tool(returns=Booking, writes=["bookings"])
def book_delivery(world, order_id: str, slot: str) -> dict[str, Any]:
    """Book the delivery of a grocery order into a weekly slot such as 'Fri 12:00-14:00'."""
    world.get("orders", "order_id", order_id, what="order")
    if slot not in SLOTS:
        raise ToolError(f"no delivery slot {slot!r}; slots: {', '.join(SLOTS)}")
    if world.find("bookings", order_id=order_id):
        raise ToolError(f"order {order_id} already has a delivery booked")
    bid = world.next_id("DL")
    world.insert("bookings", {"id": bid, "order_id": order_id, "slot": slot})
    return {"id": bid, "order_id": order_id, "slot": slot, "status": "booked"}


async def solve_delivery_slot(actor) -> Any:
    cid = actor.task["customer_id"]

    async def lookup() -> str:
        return (await actor.call("get_delivery_preferences", customer_id=cid))["preferred_slot"]

    noted = actor.memory("preferred_delivery_slot")  # what the earlier chat left on file
    slot = await actor.recall("preferred_delivery_slot", lookup)
    booking = await actor.call("book_delivery", order_id=actor.task["order_id"], slot=slot)
    changed = f" (your profile no longer says {noted})" if noted and noted != slot else ""
    return actor.answer(
        f"Booked the delivery of order {actor.task['order_id']} for {slot}, your preferred "
        f"slot{changed} (booking {booking['id']}).",
        slot=slot,
    )


def booked_current_slot(world, output, trajectory) -> tuple[bool, str]:
    rows = world.table("bookings")
    ok = len(rows) == 1 and rows[0]["slot"] == SHOPPER["preferred_slot"]
    return ok and rows[0]["order_id"] == world.givens["order_id"], f"bookings: {rows}"


def answer_names_slot(world, output, trajectory) -> bool:
    return SHOPPER["preferred_slot"] in output.answer


delivery_slot = Scenario(
    id="memory-delivery-slot",
    description="Book a grocery delivery into the customer's preferred slot (it has changed).",
    domain="grocery",
    tags=["memory", "delivery", "write"],
    instruction=(
        "{name} ({customer_id}) placed grocery order {order_id} and asks you, as in earlier "
        "chats, to book the delivery into their usual preferred slot. Book it and tell them "
        "when it arrives."
    ),
    tables={
        "preferences": [{**SHOPPER, "updated": "2026-04-02"}],
        "orders": [{"order_id": "GR-88412", "customer_id": "CU-5817", "items": 23}],
        "bookings": [],
    },
    givens={
        "customer_id": SHOPPER["customer_id"],
        "name": SHOPPER["name"],
        "order_id": "GR-88412",
        "stale_memory": {"preferred_delivery_slot": OLD_SLOTS},
    },
    memory=[
        MemoryItem(
            key="preferred_delivery_slot",
            value=SHOPPER["preferred_slot"],
            session="2026-04-03 delivery chat",
            recorded_at=datetime(2026, 4, 3, 17, 40),
        ),
        MemoryItem(key="household", value="2 adults, 1 child", recorded_at=START - timedelta(90)),
    ],
    tools=[get_delivery_preferences, book_delivery],
    checks=[
        Check(name="one booking, in the current preferred slot", fn=booked_current_slot),
        Check(name="answer names the slot", fn=answer_names_slot, kind="output"),
    ],
    policy=Policy(allowed_tools=["get_delivery_preferences", "book_delivery"]),
    facts=[
        FactSpec(name="order id", pattern=r"\bGR-\d+\b", values=lambda w: {"GR-88412"}),
        FactSpec(
            name="booking id",
            pattern=r"\bDL-\d+\b",
            values=lambda w: {b["id"] for b in w.table("bookings")},
        ),
    ],
    budgets=Budgets(max_steps=6, call_timeout=5.0, trial_timeout=60.0),
    solution=solve_delivery_slot,
    reference_steps=2,
    start_time=START,
    difficulty=0.08,
)

# --- memory: the loyalty tier --------------------------------------------------------------------

DISCOUNTS = {"platinum": 20, "gold": 15, "silver": 10, "bronze": 5}
MEMBER = {"member_id": "LM-30415", "name": "Aylin Demir", "tier": "silver"}
OLD_TIERS = ["gold", "platinum"]  # before the yearly review downgraded the member


class LoyaltyAccount(BaseModel):
    member_id: str
    name: str
    tier: str
    reviewed: str


class Discount(BaseModel):
    id: str
    order_id: str
    percent: int
    status: str


@tool(returns=LoyaltyAccount)
def get_loyalty_account(world, member_id: str) -> dict[str, Any]:
    """The member's loyalty account: current tier and the date of the last tier review."""
    return dict(world.get("members", "member_id", member_id, what="member"))


@tool(returns=Discount, writes=["discounts"])
def apply_discount(world, order_id: str, percent: int) -> dict[str, Any]:
    """Apply a loyalty discount (a percentage of the order total) to an open order."""
    world.get("orders", "order_id", order_id, what="order")
    if world.find("discounts", order_id=order_id):
        raise ToolError(f"order {order_id} already has a discount")
    did = world.next_id("DS")
    world.insert("discounts", {"id": did, "order_id": order_id, "percent": percent})
    return {"id": did, "order_id": order_id, "percent": percent, "status": "applied"}


async def solve_loyalty(actor) -> Any:
    mid = actor.task["member_id"]

    async def lookup() -> str:
        return (await actor.call("get_loyalty_account", member_id=mid))["tier"]

    noted = actor.memory("loyalty_tier")  # the tier the earlier chat left on file
    tier = str(await actor.recall("loyalty_tier", lookup)).lower()
    percent = DISCOUNTS.get(tier, 0)
    discount = await actor.call("apply_discount", order_id=actor.task["order_id"], percent=percent)
    changed = f", after the tier review (it was {noted} before)" if noted and noted != tier else ""
    return actor.answer(
        f"Applied your {tier.capitalize()} member discount of {percent}% to order "
        f"{actor.task['order_id']}{changed} (discount {discount['id']}).",
        tier=tier,
        percent=percent,
    )


def discounted_for_silver(world, output, trajectory) -> tuple[bool, str]:
    rows = world.table("discounts")
    ok = len(rows) == 1 and rows[0]["percent"] == DISCOUNTS[MEMBER["tier"]]
    return ok and rows[0]["order_id"] == world.givens["order_id"], f"discounts: {rows}"


def answer_names_tier(world, output, trajectory) -> bool:
    return "Silver" in output.answer and f"{DISCOUNTS['silver']}%" in output.answer


loyalty_tier = Scenario(
    id="memory-loyalty-tier",
    description="Apply the loyalty discount of the member's tier (downgraded since last time).",
    domain="retail",
    tags=["memory", "loyalty", "write"],
    instruction=(
        "{name} (member {member_id}) is back about order {order_id}, as in your chat last "
        "month. Apply the loyalty discount their tier entitles them to (platinum 20%, gold 15%, "
        "silver 10%, bronze 5%) and tell them what they got."
    ),
    tables={
        "members": [{**MEMBER, "reviewed": "2026-04-01"}],
        "orders": [{"order_id": "WO-71208", "member_id": "LM-30415", "total": 214.5}],
        "discounts": [],
    },
    givens={
        "name": MEMBER["name"],
        "member_id": MEMBER["member_id"],
        "order_id": "WO-71208",
        "stale_memory": {"loyalty_tier": OLD_TIERS},
    },
    memory=[
        MemoryItem(
            key="loyalty_tier",
            value=MEMBER["tier"],
            session="2026-04-08 order chat",
            recorded_at=datetime(2026, 4, 8, 11, 15),
        )
    ],
    tools=[get_loyalty_account, apply_discount],
    checks=[
        Check(name="one discount, at the current tier's rate", fn=discounted_for_silver),
        Check(name="answer names the tier and rate", fn=answer_names_tier, kind="output"),
    ],
    policy=Policy(allowed_tools=["get_loyalty_account", "apply_discount"]),
    facts=[
        FactSpec(name="order id", pattern=r"\bWO-\d+\b", values=lambda w: {"WO-71208"}),
        FactSpec(
            name="discount id",
            pattern=r"\bDS-\d+\b",
            values=lambda w: {d["id"] for d in w.table("discounts")},
        ),
    ],
    budgets=Budgets(max_steps=6, call_timeout=5.0, trial_timeout=60.0),
    solution=solve_loyalty,
    reference_steps=2,
    start_time=START,
    difficulty=0.06,
)
