"""End to end with a real Celery worker process (the `webhooks` queue, threads pool, as in the
Procfile) on the test database and the test broker, and a real HTTPS receiver on loopback.

Only these tests start processes: the after-commit hook reaching a worker through the broker,
and a worker killed with SIGKILL in the middle of a delivery, whose delivery is attempted
again once its lease runs out (time moved with time-machine; the recovering beat tick and task
run in the test process). Waiting for the worker uses deadlines on observable facts (the
receiver got the request, the row changed), never fixed sleeps.
"""

import datetime
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import time_machine
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from config.celery import app
from events.services import emit
from tests.webhooks.conftest import payment_object
from webhooks.delivery import LEASE, delivery_run, due_delivery_ids
from webhooks.models import Attempt, Delivery

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
        reason="the worker process must share the test database; the SQLite one is in memory",
    ),
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
WORKER_START_TIMEOUT = 30


def worker_database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def purge_webhooks_queue() -> None:
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("webhooks")


@pytest.fixture
def worker(loopback_allowed, ca_bundle):
    purge_webhooks_queue()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": worker_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "WEBHOOK_CA_BUNDLE": ca_bundle,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "webhooks"]
        + ["--pool", "threads", "--concurrency", "2", "--prefetch-multiplier", "1"]
        + ["--without-gossip", "--without-mingle", "--without-heartbeat", "-n", "e2e@%h"]
        + ["--loglevel", "INFO"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    ready = threading.Event()
    output: list[str] = []
    threading.Thread(target=drain, args=(process, output, ready), daemon=True).start()
    assert ready.wait(WORKER_START_TIMEOUT), "the Celery worker did not start:\n" + "".join(output)
    yield process
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def drain(process, output: list[str], ready: threading.Event) -> None:
    """Read the worker's log (a full pipe would block it) and notice when it is ready."""
    for line in process.stdout:
        output.append(line)
        if " ready." in line:
            ready.set()


def emit_committed(merchant):
    with transaction.atomic():
        return emit(
            merchant=merchant, livemode=False, type="payment.captured", obj=payment_object()
        )


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the worker"
        time.sleep(0.05)


def test_a_committed_event_reaches_the_receiver_through_the_worker(
    worker, receiver, endpoint_for, merchant
):
    endpoint_for(receiver)
    event = emit_committed(merchant)  # its after-commit hook enqueues the delivery
    assert receiver.arrived.wait(20)
    assert receiver.requests[0].headers["Service-Event-Id"] == event.id
    wait_for(lambda: Attempt.objects.filter(event_id=event.id).exists())
    assert Delivery.objects.get(event_id=event.id).status == "delivered"


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
    assert not Attempt.objects.filter(event_id=event.id).exists()
    assert due_delivery_ids() == []  # the dead worker's lease still holds it
    with time_machine.travel(delivery.claimed_until + datetime.timedelta(seconds=1)):
        assert due_delivery_ids() == [delivery.id]  # what the beat tick enqueues
        attempt = delivery_run(delivery.id)
    assert attempt.status == "delivered" and attempt.attempt == 1
    assert [r.headers["Service-Event-Id"] for r in receiver.requests] == [event.id, event.id]
    assert LEASE < datetime.timedelta(minutes=5)  # retried well before the next sweep
