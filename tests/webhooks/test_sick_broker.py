"""The after-commit nudge with the broker sick: it fails within REDIS_TIMEOUT (hung) or at once
(down, or known to be down: infra/breaker.py), never holds the request, and leaves its
deliveries due for the next beat tick rather than "in the broker" for ENQUEUED_GRACE
(docs/dependencies.md). A hung broker is a proxy in front of the test Redis that accepts and
never answers (tests/sick.py); a dead one a closed port."""

import datetime
import threading

import pytest
from django.db import connection
from django.utils import timezone

from config.celery import app
from tests.sick import CLOSED_PORT_URL, FORWARD
from webhooks.claims import due_delivery_ids
from webhooks.fanout import events_fan_out
from webhooks.tasks import deliver_due, enqueue_deliveries

pytestmark = pytest.mark.django_db(transaction=True)
NEVER = 60  # seconds: a nudge still waiting then is waiting forever


@pytest.fixture
def broker_at():
    """broker_at(url): this process publishes to the broker at `url` until the test ends."""
    original = app.conf.broker_url

    def point(url: str) -> None:
        app.conf.broker_url = url
        # Made again from the url on next use. Not closed: kombu keeps one pool per url, and
        # the test's url is the next test's.
        app._pool = app.amqp._producer_pool = None

    yield point
    point(original)


@pytest.fixture
def nudged(receiver, endpoint_for, emit_event) -> list[str]:
    """A committed delivery marked as nudged, its nudge not sent yet."""
    endpoint_for(receiver)
    delivery_ids = events_fan_out([emit_event().id])
    assert delivery_ids and due_delivery_ids() == []
    return delivery_ids


def nudge_in_a_thread(delivery_ids: list[str]) -> threading.Thread:
    """enqueue_deliveries as the after-commit hook of a request runs it; the thread is returned
    once it ended, or after NEVER seconds (the test then fails on it being alive)."""

    def run():
        try:
            enqueue_deliveries(delivery_ids)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=NEVER)
    return thread


def test_a_nudge_to_a_hung_broker_gives_up_and_leaves_the_delivery_to_the_tick(
    sick_redis, broker_at, nudged
):
    broker_at(sick_redis.url)
    assert not nudge_in_a_thread(nudged).is_alive()
    assert sick_redis.accepted >= 1
    assert due_delivery_ids() == nudged  # not "in the broker": the next tick sends it


def test_once_the_broker_failed_nudges_touch_no_socket_until_the_interval_ends(
    sick_redis, broker_at, nudged, settings, time_machine
):
    # Time runs (kombu's waits need it to); the interval is longer than the test.
    settings.DEPENDENCY_RETRY_SECONDS = 600
    time_machine.move_to(timezone.now())
    broker_at(sick_redis.url)
    nudge_in_a_thread(nudged)
    tried = sick_redis.accepted
    assert not nudge_in_a_thread(nudged).is_alive()
    assert sick_redis.accepted == tried
    sick_redis.set_mode(FORWARD)  # the broker is back
    time_machine.shift(datetime.timedelta(seconds=settings.DEPENDENCY_RETRY_SECONDS))
    deliver_due()  # the beat tick: nudges what is due, through the broker again
    assert sick_redis.accepted > tried
    assert due_delivery_ids() == []  # nudged: in the broker now


def test_a_nudge_to_a_dead_broker_leaves_the_delivery_to_the_tick(broker_at, nudged):
    broker_at(CLOSED_PORT_URL)
    enqueue_deliveries(nudged)
    assert due_delivery_ids() == nudged
