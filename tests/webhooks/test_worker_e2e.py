"""End to end with a real Celery worker process (the `webhooks` queue, threads pool, as in the
Procfile) on the test database and the test broker, and a real HTTPS receiver on loopback.

Only these tests start processes: the after-commit hook reaching a worker through the broker,
and a worker killed with SIGKILL in the middle of a delivery, whose delivery is attempted
again once its lease runs out (time moved with time-machine; the recovering beat tick and task
run in the test process). Waiting for the worker uses deadlines on observable facts (the
receiver got the request, the row changed), never fixed sleeps.
"""

import datetime
import json
import os
import signal

import pytest
import time_machine
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from events.services import emit
from tests.e2e.processes import celery_worker, wait_for
from tests.e2e.processes import test_database_url as database_url
from tests.payments.support import APPROVED, created
from tests.sick import FORWARD, Proxy
from tests.webhooks.conftest import QUEUES, payment_object, purge_webhooks_queue
from tests.webhooks.receiver import Receiver
from webhooks import tasks
from webhooks.attempts import delivery_run
from webhooks.bulkhead import ENQUEUED_GRACE, LEASE
from webhooks.claims import due_delivery_ids
from webhooks.models import Attempt, Delivery

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
        reason="the worker process must share the test database; the SQLite one is in memory",
    ),
    pytest.mark.django_db(transaction=True),
]


def emit_committed(merchant, livemode=False):
    with transaction.atomic():
        return emit(
            merchant=merchant, livemode=livemode, type="payment.captured", obj=payment_object()
        )


def test_a_committed_event_reaches_the_receiver_through_the_worker(
    worker, receiver, endpoint_for, merchant
):
    endpoint_for(receiver)
    event = emit_committed(merchant)  # its after-commit hook enqueues the delivery
    assert receiver.arrived.wait(20)
    assert receiver.requests[0].headers["Service-Event-Id"] == event.id
    wait_for(lambda: Attempt.objects.filter(event_id=event.id).exists())
    assert Delivery.objects.get(event_id=event.id).status == "delivered"


def test_live_deliveries_never_wait_behind_hanging_test_ones(
    loopback_allowed, ca_bundle, webhook_ca, receiver, endpoint_for, merchant
):
    """issue 20: a test-mode endpoint that never answers took the worker's threads, and live
    webhooks waited 22-40 s. Two pools, as in the Procfile: every thread of the test pool
    hangs on the test-mode receiver, and the live pool delivers a live event at once."""
    purge_webhooks_queue()
    receiver.reply.hold = True  # the test-mode endpoint hangs
    live_receiver = Receiver(webhook_ca)
    env = {"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8", "WEBHOOK_CA_BUNDLE": ca_bundle}
    try:
        with celery_worker(tasks.QUEUES[True], **env), celery_worker(tasks.QUEUES[False], **env):
            endpoint_for(receiver)
            endpoint_for(live_receiver, livemode=True)
            for _ in range(4):  # more than the test pool's two threads
                emit_committed(merchant)
            wait_for(lambda: len(receiver.requests) == 2)  # both of its threads hang
            live = emit_committed(merchant, livemode=True)
            wait_for(lambda: len(live_receiver.requests) == 1, timeout=5)  # not after 10 s
            assert live_receiver.requests[0].headers["Service-Event-Id"] == live.id
            receiver.release.set()
    finally:
        live_receiver.close()


def test_a_worker_killed_mid_delivery_does_not_lose_it(worker, receiver, endpoint_for, merchant):
    endpoint_for(receiver)
    receiver.reply.hold = True  # the worker is inside the HTTP request when it dies
    event = emit_committed(merchant)
    assert receiver.arrived.wait(20)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(10)
    receiver.reply.hold = False
    receiver.release.set()

    delivery = Delivery.objects.get(event_id=event.id)
    assert delivery.status == "pending" and delivery.claimed_until > timezone.now()
    # The dead worker's claim runs out within one lease: retried well before the next sweep.
    assert delivery.claimed_until <= timezone.now() + LEASE
    assert not Attempt.objects.filter(event_id=event.id).exists()
    assert due_delivery_ids() == []  # the dead worker's lease still holds it
    with time_machine.travel(delivery.claimed_until + datetime.timedelta(seconds=1)):
        assert due_delivery_ids() == [delivery.id]  # what the beat tick enqueues
        attempt = delivery_run(delivery.id)
    assert attempt.status == "delivered" and attempt.attempt == 1
    assert [r.headers["Service-Event-Id"] for r in receiver.requests] == [event.id, event.id]


def test_a_nudge_that_finds_the_database_down_is_delivered_soon_after_it_returns(
    loopback_allowed, ca_bundle, receiver, endpoint_for, merchant
):
    """The worker reaches PostgreSQL through a proxy that goes down (a server restart) while
    the nudge arrives. No beat runs here: only the nudge, sent again, can deliver before the
    30 s ENQUEUED_GRACE."""
    purge_webhooks_queue()
    database = Proxy(database_url())
    with celery_worker(
        *QUEUES,
        DATABASE_URL=database.url,
        WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8",
        WEBHOOK_CA_BUNDLE=ca_bundle,
    ):
        endpoint_for(receiver)
        database.go_down()
        tried = database.accepted
        emit_committed(merchant)  # the worker takes the nudge and cannot reach the database
        wait_for(lambda: database.accepted > tried)
        database.set_mode(FORWARD)
        assert receiver.arrived.wait(ENQUEUED_GRACE.total_seconds() / 2)
    database.close()


def test_the_worker_outlives_its_broker_dying_with_deliveries_in_flight(
    loopback_allowed, ca_bundle, receiver, endpoint_for, merchant, settings
):
    """Redis lost while a delivery runs (its message unacknowledged, acks_late) and the worker
    waits on Redis for more: the worker reconnects when Redis returns and delivers what is
    nudged then. Whether kombu's close fails here depends on which of the worker's sockets
    reports the loss first (issue 12: one run in four of `make faults`); the deterministic
    reproduction of that failure is tests/test_broker_redis.py."""
    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: the broker under test is a real Redis")
    purge_webhooks_queue()
    broker = Proxy(settings.REDIS_URL)
    with celery_worker(
        *QUEUES,
        REDIS_URL=broker.url,
        WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8",
        WEBHOOK_CA_BUNDLE=ca_bundle,
    ) as worker:
        endpoint_for(receiver)
        receiver.reply.hold = True
        emit_committed(merchant)
        # One thread inside a delivery (its message unacknowledged), the other free: the
        # consumer is waiting on Redis (BRPOP) for more when Redis dies.
        assert receiver.arrived.wait(20)
        broker.go_down()
        wait_for(lambda: any("Connection to broker lost" in line for line in worker.output))
        receiver.release.set()  # the delivery ends; its ack meets a dead broker
        wait_for(lambda: Attempt.objects.exists())
        broker.set_mode(FORWARD)
        receiver.reply.hold = False
        event = emit_committed(merchant)
        wait_for(lambda: event.id in [r.headers["Service-Event-Id"] for r in receiver.requests])
        assert worker.poll() is None, "".join(worker.output)
    broker.close()


def test_sandbox_time_travel_sends_the_expiry_webhook_through_the_worker(
    worker, receiver, endpoint_for, api
):
    """POST /v1/sandbox/advance-clock: an authorization's 7 days pass at once, and the
    payment.expired webhook a merchant would wait a week for arrives, saying so."""
    endpoint_for(receiver, enabled_events=["payment.expired"])
    payment = created(api, APPROVED, capture_method="manual")
    moved = api.post(
        f"/v1/sandbox/advance-clock/{payment['id']}", {"seconds": 7 * 86_400}, format="json"
    )
    assert moved.json()["status"] == "expired"
    assert receiver.arrived.wait(20)
    body = json.loads(receiver.requests[0].body)
    assert receiver.requests[0].headers["Service-Event-Type"] == "payment.expired"
    assert body["data"]["object"]["id"] == payment["id"]
    assert body["data"]["object"]["clock_advanced_by"] == 7 * 86_400
