"""Calendar and scheduling: answers that depend on what "today" is.

The agent manages a team calendar (times in UTC) and a customer-callback queue. Each task names
a day relative to today ("next Tuesday", "the last business day of this month", "tomorrow at
9:00 in the customer's time zone"), so the agent must read the world's clock and do the date
arithmetic itself. Tools run under the world's frozen clock (``freeze_time=True``): they refuse
bookings in the past using ``datetime.now()``/``date.today()`` as a real service would.

The verifiers compute the expected day from the world's clock at judging time
(``world.clock.now()``), never a hard-coded date: under a clock-skew perturbation an agent that
reads the (skewed) clock and reasons from it still passes, while one that assumed a stale
"today" fails. Start times sit far enough from midnight that a trial's own duration cannot move
the answer.
"""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from faker import Faker
from pydantic import BaseModel

from chaoseval.errors import ToolError
from chaoseval.model.scenario import Budgets, Check, FactSpec, Policy, Scenario, tool

WORK_START, WORK_END = time(9, 0), time(17, 0)
# Each scenario's start instant is chosen so the relative date is not the obvious one.
NEXT_TUESDAY_START = datetime(2026, 4, 30, 15, 10)  # Thursday; next Tuesday is in May
MONTH_END_START = datetime(2026, 5, 26, 9, 40)  # May 31 is a Sunday
CALLBACK_START = datetime(2026, 3, 31, 22, 30)  # already April 1 east of Berlin
TIME_ZONES = [
    "Asia/Tokyo",
    "Australia/Sydney",
    "Pacific/Auckland",
    "Asia/Kolkata",
    "Europe/Berlin",
    "America/New_York",
    "America/Los_Angeles",
    "America/Sao_Paulo",
]
TITLES = ["Sprint planning", "1:1", "Design review", "Vendor call", "Budget sync", "Interview"]


class Event(BaseModel):
    id: str
    title: str
    start: str
    end: str
    attendees: list[str]


class DaySchedule(BaseModel):
    day: str
    events: list[Event]


class Slot(BaseModel):
    day: str
    start: str
    end: str


class Contact(BaseModel):
    name: str
    email: str
    timezone: str


class Holiday(BaseModel):
    day: str
    name: str


class Holidays(BaseModel):
    year: int
    month: int
    holidays: list[Holiday]


class Callback(BaseModel):
    id: str
    email: str
    start_utc: str
    duration_minutes: int


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ToolError(f"day must be an ISO date like 2026-05-05, got {text!r}") from None


def _instant(text: str) -> datetime:
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"start must be an ISO date-time like 2026-05-05T10:30, got {text!r}"
        ) from None
    return dt.astimezone(UTC).replace(tzinfo=None) if dt.tzinfo else dt


def _hhmm(text: str) -> time:
    try:
        return time.fromisoformat(text.strip())
    except ValueError:
        raise ToolError(f"times are HH:MM, got {text!r}") from None


def _events_on(events: list[dict[str, Any]], day: date) -> list[dict[str, Any]]:
    return sorted(
        (e for e in events if datetime.fromisoformat(e["start"]).date() == day),
        key=lambda e: e["start"],
    )


def first_free(
    events: list[dict[str, Any]], day: date, minutes: int, earliest: time, latest: time
) -> datetime | None:
    """The earliest start on ``day`` with ``minutes`` free between ``earliest`` and ``latest``."""
    t = datetime.combine(day, earliest)
    end_of_day = datetime.combine(day, latest)
    need = timedelta(minutes=minutes)
    for ev in _events_on(events, day):
        start, end = datetime.fromisoformat(ev["start"]), datetime.fromisoformat(ev["end"])
        if start - t >= need:
            break
        t = max(t, end)
    return t if t + need <= end_of_day else None


@tool(returns=DaySchedule)
def list_events(world, day: str) -> dict[str, Any]:
    """The team calendar's events on one day (ISO date; times are UTC)."""
    d = _day(day)
    return {"day": d.isoformat(), "events": [dict(e) for e in _events_on(world.table("events"), d)]}


@tool(returns=Slot)
def find_free_slot(
    world, day: str, duration_minutes: int, earliest: str = "09:00", latest: str = "17:00"
) -> dict[str, Any]:
    """The earliest free slot of the given length on a day (ISO date, UTC working hours)."""
    d = _day(day)
    if d < date.today():
        raise ToolError(f"{d.isoformat()} is in the past (today is {date.today().isoformat()})")
    start = first_free(world.table("events"), d, duration_minutes, _hhmm(earliest), _hhmm(latest))
    if start is None:
        raise ToolError(f"no free {duration_minutes}-minute slot on {d.isoformat()}")
    end = start + timedelta(minutes=duration_minutes)
    return {"day": d.isoformat(), "start": start.isoformat(), "end": end.isoformat()}


@tool(returns=Event, writes=["events"])
def create_event(
    world, title: str, start: str, duration_minutes: int, attendees: list[str]
) -> dict[str, Any]:
    """Put an event on the team calendar (start as ISO date-time in UTC)."""
    begin = _instant(start)
    if begin < datetime.now():
        raise ToolError(f"cannot book in the past: {begin.isoformat()} is before now")
    if not 5 <= duration_minutes <= 480:
        raise ToolError("duration_minutes must be between 5 and 480")
    end = begin + timedelta(minutes=duration_minutes)
    for ev in world.table("events"):
        s, e = datetime.fromisoformat(ev["start"]), datetime.fromisoformat(ev["end"])
        if s < end and begin < e:
            raise ToolError(f"overlaps {ev['id']} ({ev['title']}, {ev['start']}-{ev['end']})")
    row = {
        "id": world.next_id("EV"),
        "title": title,
        "start": begin.isoformat(),
        "end": end.isoformat(),
        "attendees": list(attendees),
    }
    return dict(world.insert("events", row))


@tool(writes=["events"])
def delete_event(world, event_id: str) -> dict[str, Any]:
    """Delete an event from the team calendar (organisers only)."""
    world.delete("events", "id", event_id)
    return {"id": event_id, "status": "deleted"}


@tool(returns=Holidays)
def list_holidays(world, year: int, month: int) -> dict[str, Any]:
    """Company holidays (office closed) in a month."""
    if not 1 <= month <= 12:
        raise ToolError("month must be 1-12")
    prefix = f"{year:04d}-{month:02d}-"
    rows = [dict(h) for h in world.table("holidays") if h["day"].startswith(prefix)]
    return {"year": year, "month": month, "holidays": rows}


@tool(returns=Contact)
def get_contact(world, email: str) -> dict[str, Any]:
    """A customer's contact card, including their IANA time zone."""
    return dict(world.get("contacts", "email", email.strip().lower(), what="contact"))


@tool(returns=Callback, writes=["callbacks"])
def book_callback(world, email: str, start_utc: str, duration_minutes: int = 15) -> dict:
    """Queue a phone callback to a customer at an instant (ISO date-time in UTC)."""
    world.get("contacts", "email", email.strip().lower(), what="contact")
    begin = _instant(start_utc)
    if begin < datetime.now():
        raise ToolError(f"cannot book in the past: {begin.isoformat()} is before now")
    row = {
        "id": world.next_id("CB"),
        "email": email.strip().lower(),
        "start_utc": begin.isoformat(),
        "duration_minutes": duration_minutes,
    }
    return dict(world.insert("callbacks", row))


def make_world(start: datetime, *, holiday_chance: int = 0):
    """A busy team calendar around ``start``, a contact list, maybe a company holiday."""

    def generate(fake: Faker) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
        team = [fake.unique.company_email().lower() for _ in range(5)]
        events = []
        day = start.date() - timedelta(days=3)
        while day <= start.date() + timedelta(days=45):
            if day.weekday() < 5:
                # The morning is usually booked, so the first free slot is rarely 09:00.
                t = datetime.combine(day, time(9, 0))
                for _ in range(fake.random_int(1, 4)):
                    length = timedelta(minutes=fake.random_element([30, 45, 60, 90]))
                    if (t + length).time() > WORK_END:
                        break
                    events.append(
                        {
                            "id": f"EV-{fake.unique.random_int(1000, 9999)}",
                            "title": fake.random_element(TITLES),
                            "start": t.isoformat(),
                            "end": (t + length).isoformat(),
                            "attendees": fake.random_elements(team, length=2, unique=True),
                        }
                    )
                    t += length + timedelta(minutes=fake.random_element([0, 0, 15, 30, 60]))
            day += timedelta(days=1)
        contacts = [
            {
                "name": fake.name(),
                "email": fake.unique.email().lower(),
                "timezone": fake.random_element(TIME_ZONES),
            }
            for _ in range(8)
        ]
        holidays = []
        last = _last_weekday(start.year, start.month)
        if fake.random_int(1, 100) <= holiday_chance:
            holidays.append({"day": last.isoformat(), "name": "Company offsite (office closed)"})
        holidays.append({"day": f"{start.year:04d}-12-25", "name": "Christmas Day"})
        customer = fake.random_element(contacts)
        givens = {
            "attendee": fake.random_element(team),
            "customer": customer["name"],
            "email": customer["email"],
            "title": fake.random_element(["Quarterly review", "Roadmap walkthrough", "Retro"]),
        }
        tables = {"events": events, "contacts": contacts, "holidays": holidays, "callbacks": []}
        return tables, givens

    return generate


def _last_weekday(year: int, month: int) -> date:
    d = date(year, month, calendar.monthrange(year, month)[1])
    while d.weekday() >= 5:
        d -= timedelta(days=1)
    return d


# --- what the verifier expects, from the world's clock ------------------------------------


def next_tuesday(today: date) -> date:
    """The first Tuesday strictly after today (on a Tuesday, a week later)."""
    return today + timedelta(days=(1 - today.weekday()) % 7 or 7)


def last_business_day(year: int, month: int, holidays: set[str]) -> date:
    d = date(year, month, calendar.monthrange(year, month)[1])
    while d.weekday() >= 5 or d.isoformat() in holidays:
        d -= timedelta(days=1)
    return d


def close_review_day(today: date, holidays: set[str]) -> date:
    """This month's last business day, or next month's when that is today or already past."""
    day = last_business_day(today.year, today.month, holidays)
    if day <= today:
        nxt = date(today.year, today.month, 28) + timedelta(days=7)
        day = last_business_day(nxt.year, nxt.month, holidays)
    return day


def callback_instant(now_utc: datetime, tz: str) -> tuple[date, datetime]:
    """Tomorrow 09:00 in ``tz`` as (the customer's date, the naive UTC instant)."""
    zone = ZoneInfo(tz)
    local_day = now_utc.replace(tzinfo=UTC).astimezone(zone).date() + timedelta(days=1)
    start = datetime.combine(local_day, time(9, 0), tzinfo=zone)
    return local_day, start.astimezone(UTC).replace(tzinfo=None)


def _created(world, table: str) -> list[dict[str, Any]]:
    ids = {w.key for w in world.writes if w.table == table and w.op == "insert"}
    return [r for r in world.table(table) if r["id"] in ids]


def _original_events(world) -> list[dict[str, Any]]:
    new = {r["id"] for r in _created(world, "events")}
    return [e for e in world.table("events") if e["id"] not in new]


def booked_on(expected_day, minutes: int):
    """One new event, on the expected day, at that day's earliest free slot, with the attendee."""

    def check(world, output, trajectory) -> tuple[bool, str]:
        created = _created(world, "events")
        if len(created) != 1:
            return False, f"{len(created)} events created"
        ev = created[0]
        day = expected_day(world)
        want = first_free(_original_events(world), day, minutes, WORK_START, WORK_END)
        start = datetime.fromisoformat(ev["start"])
        ok = want is not None and start == want
        ok = ok and datetime.fromisoformat(ev["end"]) - start == timedelta(minutes=minutes)
        ok = ok and world.givens["attendee"] in ev["attendees"]
        return ok, f"booked {ev['start']}-{ev['end']}, expected {want} on {day}"

    return check


def answer_names(expected_day, table: str):
    def check(world, output, trajectory) -> tuple[bool, str]:
        created = _created(world, table)
        day = expected_day(world).isoformat()
        ok = bool(created) and created[0]["id"] in output.answer and day in output.answer
        return ok, f"answer should name the booking and {day}"

    return check


def _tuesday(world) -> date:
    return next_tuesday(world.clock.now().date())


def _month_end(world) -> date:
    return close_review_day(world.clock.now().date(), {h["day"] for h in world.table("holidays")})


def _callback_day(world) -> date:
    tz = world.get("contacts", "email", world.givens["email"])["timezone"]
    return callback_instant(world.clock.now(), tz)[0]


def callback_booked(world, output, trajectory) -> tuple[bool, str]:
    created = _created(world, "callbacks")
    if len(created) != 1:
        return False, f"{len(created)} callbacks booked"
    tz = world.get("contacts", "email", world.givens["email"])["timezone"]
    _, want = callback_instant(world.clock.now(), tz)
    cb = created[0]
    ok = cb["email"] == world.givens["email"] and cb["start_utc"] == want.isoformat()
    return ok, f"booked {cb['start_utc']} UTC, expected {want.isoformat()} ({tz})"


def calendar_untouched(world, output, trajectory) -> tuple[bool, str]:
    changed = [w for w in world.writes if w.table == "events"]
    return not changed, f"{len(changed)} calendar writes"


# --- reference solutions ------------------------------------------------------------------


async def _book_first_free(actor, day: date, minutes: int) -> Any:
    slot = await actor.call("find_free_slot", day=day.isoformat(), duration_minutes=minutes)
    event = await actor.call(
        "create_event",
        title=actor.task["title"],
        start=slot["start"],
        duration_minutes=minutes,
        attendees=[actor.task["attendee"]],
    )
    start = datetime.fromisoformat(event["start"])
    return actor.answer(
        f"Booked {event['id']} '{event['title']}' with {actor.task['attendee']} on "
        f"{start:%A} {start.date().isoformat()} at {start:%H:%M} UTC.",
        event_id=event["id"],
        day=start.date().isoformat(),
    )


async def solve_next_tuesday(actor) -> Any:
    today = actor.now().date()
    ahead = (1 - today.weekday()) % 7
    if actor.decide(ahead == 0):  # "next Tuesday" said on a Tuesday means a week later
        ahead = 7
    return await _book_first_free(actor, today + timedelta(days=ahead), 45)


async def solve_month_end(actor) -> Any:
    today = actor.now().date()
    year, month = today.year, today.month
    day = await _last_business_day(actor, year, month)
    if actor.decide(day <= today):  # too late this month: the close moves to next month's
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        day = await _last_business_day(actor, year, month)
    return await _book_first_free(actor, day, 60)


async def _last_business_day(actor, year: int, month: int) -> date:
    found = await actor.call("list_holidays", year=year, month=month)
    closed = {h["day"] for h in found["holidays"]}
    day = date(year, month, calendar.monthrange(year, month)[1])
    for _ in range(10):
        if not actor.decide(day.weekday() >= 5 or day.isoformat() in closed):
            break
        day -= timedelta(days=1)
    return day


async def solve_callback(actor) -> Any:
    contact = await actor.call("get_contact", email=actor.task["email"])
    now = actor.now()
    zone = ZoneInfo(contact["timezone"])
    local_today = now.replace(tzinfo=UTC).astimezone(zone).date()
    # "Tomorrow" is the customer's tomorrow, which may already differ from the UTC date.
    base = local_today if actor.decide(local_today != now.date()) else now.date()
    local_day = base + timedelta(days=1)
    start = datetime.combine(local_day, time(9, 0), tzinfo=zone).astimezone(UTC)
    cb = await actor.call(
        "book_callback",
        email=contact["email"],
        start_utc=start.replace(tzinfo=None).isoformat(),
        duration_minutes=15,
    )
    return actor.answer(
        f"Booked callback {cb['id']} for {contact['name']} on {local_day.isoformat()} at 09:00 "
        f"{contact['timezone']} ({cb['start_utc']} UTC).",
        callback_id=cb["id"],
        day=local_day.isoformat(),
    )


COMMON: dict[str, Any] = {
    "domain": "calendar",
    "freeze_time": True,
    "tools": [
        list_events,
        find_free_slot,
        create_event,
        delete_event,
        list_holidays,
        get_contact,
        book_callback,
    ],
    "policy": Policy(
        allowed_tools=[
            "list_events",
            "find_free_slot",
            "create_event",
            "list_holidays",
            "get_contact",
            "book_callback",
        ],
        forbidden_writes=["contacts", "holidays"],
    ),
    "facts": [
        FactSpec(
            name="event id",
            pattern=r"\bEV-\d+\b",
            values=lambda w: {e["id"] for e in w.table("events")},
        ),
        FactSpec(
            name="callback id",
            pattern=r"\bCB-\d+\b",
            values=lambda w: {c["id"] for c in w.table("callbacks")},
        ),
    ],
    "budgets": Budgets(max_steps=8, call_timeout=5.0, trial_timeout=60.0),
}

PREAMBLE = "You manage the team calendar (all calendar times are UTC). "

next_tuesday_meeting = Scenario(
    id="calendar-next-tuesday",
    description="Book a 45-minute meeting next Tuesday at the earliest free slot.",
    tags=["calendar", "relative-date", "write"],
    instruction=PREAMBLE
    + "Book a 45-minute '{title}' with {attendee} next Tuesday, at the earliest free time "
    "between 09:00 and 17:00. Reply with the event id and the date.",
    generate=make_world(NEXT_TUESDAY_START),
    start_time=NEXT_TUESDAY_START,
    checks=[
        Check(name="booked next Tuesday at the first free slot", fn=booked_on(_tuesday, 45)),
        Check(
            name="answer names the event and date",
            fn=answer_names(_tuesday, "events"),
            kind="output",
        ),
    ],
    solution=solve_next_tuesday,
    reference_steps=2,
    difficulty=0.025,
    **COMMON,
)

month_end_review = Scenario(
    id="calendar-month-end-close",
    description="Book the close review on the last business day of this month (weekend/holiday).",
    tags=["calendar", "relative-date", "month-end", "write"],
    instruction=PREAMBLE
    + "Schedule the 60-minute month-end close review ('{title}') with {attendee} on the last "
    "business day of this month (Monday-Friday, excluding company holidays), at the earliest "
    "free time between 09:00 and 17:00. If that day is today or already past, use the last "
    "business day of next month instead. Reply with the event id and the date.",
    generate=make_world(MONTH_END_START, holiday_chance=50),
    start_time=MONTH_END_START,
    checks=[
        Check(name="booked on the last business day", fn=booked_on(_month_end, 60)),
        Check(
            name="answer names the event and date",
            fn=answer_names(_month_end, "events"),
            kind="output",
        ),
    ],
    solution=solve_month_end,
    reference_steps=3,
    difficulty=0.12,
    **COMMON,
)

callback_tomorrow = Scenario(
    id="calendar-callback-tomorrow-tz",
    description="Queue a callback for tomorrow 09:00 in the customer's time zone (date line!).",
    tags=["calendar", "relative-date", "time-zone", "write"],
    instruction="You run the customer-callback queue (times in UTC). Customer {customer} "
    "({email}) asked to be called back tomorrow at 9:00 in the morning, their local time. Look "
    "up their time zone and book a 15-minute callback. Reply with the callback id and their "
    "local date.",
    generate=make_world(CALLBACK_START),
    start_time=CALLBACK_START,
    checks=[
        Check(name="callback at tomorrow 09:00 local", fn=callback_booked),
        Check(name="calendar untouched", fn=calendar_untouched),
        Check(
            name="answer names the callback and local date",
            fn=answer_names(_callback_day, "callbacks"),
            kind="output",
        ),
    ],
    solution=solve_callback,
    reference_steps=2,
    difficulty=0.13,
    **COMMON,
)
