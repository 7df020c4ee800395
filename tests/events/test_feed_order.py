"""A reader of the feed never skips an event, under concurrent writers (events/feed.py): real
threads, each on its own database connection, no mocks.

Other sessions on the same PostgreSQL server (other test runs) may hold back what the feed
shows (it waits for older transactions): readers here wait for events, never for a time."""

import random
import threading

import pytest
from django.db import connections, transaction

from events.feed import START, encode_cursor, position_of, read_feed
from events.models import Event
from events.services import emit, emit_all

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WRITERS = 6
TRANSACTIONS_PER_WRITER = 40


def payment(number: int) -> dict:
    return {"id": f"pay_{number:026d}", "object": "payment", "status": "captured"}


def write_events(merchant, writer: int, committed: list, start: threading.Barrier) -> None:
    """Transactions of one or two events; one in five rolls back after writing."""
    chance = random.Random(writer)
    start.wait()
    try:
        for n in range(TRANSACTIONS_PER_WRITER):
            types = ["payment.created", "payment.captured"][: chance.choice([1, 2])]
            try:
                with transaction.atomic():
                    events = emit_all(
                        merchant=merchant, livemode=False, types=types, obj=payment(n)
                    )
                    if chance.random() < 0.2:
                        raise LookupError("the caller fails after writing")
            except LookupError:
                continue
            committed.extend(event.id for event in events)
    finally:
        connections.close_all()


def follow(merchant, seen: list, committed: list, writers_done: threading.Event) -> None:
    """A consumer storing its cursor after each page, until it has every committed event."""
    cursor = START
    try:
        while not (writers_done.is_set() and len(seen) >= len(committed)):
            page = read_feed(merchant=merchant, livemode=False, after=cursor, limit=7, wait=1)
            seen.extend((position_of(event), event.id) for event in page.events)
            if page.events:
                cursor = position_of(page.events[-1])
    finally:
        connections.close_all()


def test_a_reader_never_sees_a_hole_among_concurrent_writers(merchant, settings):
    settings.EVENT_FAN_OUT_HOOKS = []
    committed, seen = [], []
    start, writers_done = threading.Barrier(WRITERS), threading.Event()
    writers = [
        threading.Thread(target=write_events, args=(merchant, n, committed, start))
        for n in range(WRITERS)
    ]
    reader = threading.Thread(target=follow, args=(merchant, seen, committed, writers_done))
    reader.start()
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    writers_done.set()
    reader.join()

    # Read while writing, page by page: every committed event once, none rolled back, and
    # never one ordered before an event already read (it would have been skipped).
    positions = [position for position, _ in seen]
    assert positions == sorted(set(positions))
    assert sorted(event_id for _, event_id in seen) == sorted(committed)
    stored = Event.objects.filter(merchant=merchant, livemode=False)
    assert [e.id for e in stored.order_by("transaction_id", "sequence")] == [i for _, i in seen]


def test_an_event_committed_early_waits_for_the_transaction_that_began_before_it(
    merchant, settings
):
    """The skip an id cursor suffers: A writes, B writes after A but commits first; a reader
    that showed B would move past A's place, and A, committed next, would be skipped."""
    settings.EVENT_FAN_OUT_HOOKS = []
    a_written, a_may_commit = threading.Event(), threading.Event()

    def writer_a():
        try:
            with transaction.atomic():
                emit(merchant=merchant, livemode=False, type="payment.created", obj=payment(1))
                a_written.set()
                assert a_may_commit.wait(timeout=60)
        finally:
            connections.close_all()

    first = threading.Thread(target=writer_a)
    first.start()
    assert a_written.wait(timeout=60)
    with transaction.atomic():
        emit(merchant=merchant, livemode=False, type="payment.created", obj=payment(2))
    assert Event.objects.filter(resource_id=payment(2)["id"]).exists()  # B is committed

    assert read_feed(merchant=merchant, livemode=False, after=START, limit=10).events == []
    a_may_commit.set()
    first.join()
    events = []
    while len(events) < 2:  # once A has ended (and any older transaction of other sessions)
        events = read_feed(merchant=merchant, livemode=False, after=START, limit=10, wait=1).events
    assert [e.resource_id for e in events] == [payment(1)["id"], payment(2)["id"]]
    page = read_feed(merchant=merchant, livemode=False, after=START, limit=10)
    assert page.next_cursor == encode_cursor(position_of(events[-1]))
