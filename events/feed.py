"""A merchant's event feed (GET /v1/events/feed, docs/events.md "The feed"): its events of one
mode in the order of (`Event.transaction_id`, `Event.sequence`), a cursor after each one.

Both are set by the database as an event is inserted (migration 0007): the id of the writing
transaction, then a sequence. A page holds only events whose transaction id is below the
oldest transaction still running, read in the same statement (one snapshot): every
transaction below it has ended, so every event it wrote is visible now or never will be, and
every later transaction gets a larger id. An event can therefore never appear behind a cursor
already handed out: a consumer that stores the cursor after processing each event never misses
one and never gets one twice. The price is latency: an event waits for the transactions that
began before its own to end (ours are short: no network call inside a transaction). No lock is
taken on the write path (bench/bench_feed.py measured the counter-row alternative).

The long poll waits in this process for an event past the cursor, reading the feed's index
every FEED_POLL_SECONDS, at most EVENT_FEED_MAX_WAIT seconds, and only while fewer than
EVENT_FEED_WAITERS requests of the process wait: one more that would wait is 429 with
`Retry-After: 1` (an empty answer at once would have its client ask again at once, in a busy
loop). Waits never take the threads the rest of the API needs.
"""

import base64
import binascii
import re
import threading
import time
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from django.conf import settings
from django.db import connection
from django.db.models.expressions import RawSQL

from accounts.models import Merchant
from api.errors import RateLimited, ValidationFailed
from events.models import Event
from infra.rows import Columns

_CURSOR_RE = re.compile(r"feed1:([0-9]{1,19})\.([0-9]{1,19})")
FEED_POLL_SECONDS = 0.25
# The oldest transaction still running, in the statement's own snapshot (PostgreSQL).
OLDEST_RUNNING = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"


@cache
def page_sql(vendor: str) -> str:
    """The page's statement, its columns named from the model (infra.rows.Columns). On
    PostgreSQL only events of transactions below the oldest one still running, read in the
    same statement's snapshot; the embedded SQLite has a single writer, whose events are all
    visible once committed."""
    c = Columns(Event)
    ended = f"AND {c.transaction_id} < {OLDEST_RUNNING}" if vendor == "postgresql" else ""
    return (
        f"SELECT * FROM {c.table} WHERE {c.merchant} = %s AND {c.livemode} = %s "
        f"AND ({c.transaction_id}, {c.sequence}) > (%s, %s) {ended} "
        f"ORDER BY {c.transaction_id}, {c.sequence} LIMIT %s"
    )


class Position(NamedTuple):
    """An event's place in the feed; (0, 0) is before the first."""

    transaction_id: int
    sequence: int


START = Position(0, 0)


@dataclass(frozen=True)
class FeedPage:
    events: list[Event]
    has_more: bool  # more events past the last one, now
    next_cursor: str  # after the last event, or the cursor asked for when there is none


def position_of(event: Event) -> Position:
    return Position(event.transaction_id, event.sequence)


def encode_cursor(position: Position) -> str:
    text = f"feed1:{position.transaction_id}.{position.sequence}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(value: str | None, param: str = "after") -> Position:
    """A cursor from encode_cursor -> the position it is after; none: the start."""
    if value is None:
        return START
    try:
        text = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    if not (found := _CURSOR_RE.fullmatch(text)):
        raise ValidationFailed(f"Invalid cursor in {param}.", param=param)
    return Position(int(found[1]), int(found[2]))


def events_after(merchant: Merchant, livemode: bool, after: Position, limit: int) -> list[Event]:
    """Up to `limit` + 1 events past `after`, in feed order (index event_feed)."""
    params = [merchant.pk, livemode, *after, limit + 1]
    return list(Event.objects.raw(page_sql(connection.vendor), params))


def end_of_feed(merchant: Merchant, livemode: bool) -> FeedPage:
    """No events, and the cursor after the last one shown now (`after=now`): a consumer that
    stores it follows only what comes next, and misses none of it (events not shown yet all
    belong to transactions at or above the oldest running one, so come after)."""
    rows = Event.objects.filter(merchant=merchant, livemode=livemode)
    if connection.vendor == "postgresql":
        rows = rows.filter(transaction_id__lt=RawSQL(OLDEST_RUNNING, []))
    last = rows.order_by("-transaction_id", "-sequence").values_list("transaction_id", "sequence")[
        :1
    ]
    return FeedPage(
        [], has_more=False, next_cursor=encode_cursor(Position(*last[0]) if last else START)
    )


def refuse_expired(merchant: Merchant, livemode: bool, after: Position) -> None:
    """The event a cursor is after is still there, unless retention deleted it (oldest first,
    settings.EVENT_RETENTION), and the events after it with it perhaps: said, rather than
    skipped in silence. A cursor of another account has no event here either."""
    if after == START:
        return
    rows = Event.objects.filter(merchant=merchant, livemode=livemode)
    if not rows.filter(transaction_id=after.transaction_id, sequence=after.sequence).exists():
        raise ValidationFailed(
            "No event at this cursor any more: events older than the retention period are "
            "deleted. Start again without a cursor.",
            code="cursor_expired",
            param="after",
        )


class Waiters:
    """How many requests of this process are waiting for events, capped."""

    def __init__(self):
        self._lock = threading.Lock()
        self.waiting = 0

    def enter(self) -> bool:
        with self._lock:
            if self.waiting >= settings.EVENT_FEED_WAITERS:
                return False
            self.waiting += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.waiting -= 1


WAITERS = Waiters()


def read_feed(
    *, merchant: Merchant, livemode: bool, after: Position, limit: int, wait: float = 0
) -> FeedPage:
    """The page of the feed past `after`; when it is empty, wait up to `wait` seconds (capped,
    see the module) for one."""
    refuse_expired(merchant, livemode, after)
    events = events_after(merchant, livemode, after, limit)
    if not events and wait > 0:
        events = wait_for_events(merchant, livemode, after, limit, wait)
    page = events[:limit]
    last = position_of(page[-1]) if page else after
    return FeedPage(page, has_more=len(events) > limit, next_cursor=encode_cursor(last))


def wait_for_events(
    merchant: Merchant, livemode: bool, after: Position, limit: int, wait: float
) -> list[Event]:
    """events_after(), read again until there are some or the wait is over."""
    if not WAITERS.enter():
        raise RateLimited(
            "Too many requests wait for events on this server; retry shortly.",
            headers={"Retry-After": "1"},
        )
    try:
        deadline = time.monotonic() + min(wait, settings.EVENT_FEED_MAX_WAIT)
        events: list[Event] = []
        while not events and time.monotonic() < deadline:
            time.sleep(FEED_POLL_SECONDS)
            events = events_after(merchant, livemode, after, limit)
        return events
    finally:
        WAITERS.leave()
