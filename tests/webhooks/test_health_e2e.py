"""Endpoint health and recover end to end: a real Celery worker (tests/webhooks/
test_worker_e2e.py's `worker`), a real HTTPS receiver on loopback, the API. The days of
failure before the worker's own attempt are made in the test process under time-machine (the
worker runs on the real clock); what the worker does then is read from the database and the
receiver, waited for on deadlines, never sleeps."""

import datetime

import time_machine
from django.core import mail
from django.utils import timezone

from tests.e2e.processes import wait_for
from tests.webhooks.conftest import payment_object
from tests.webhooks.test_worker_e2e import emit_committed, pytestmark  # noqa: F401
from webhooks.attempts import delivery_run
from webhooks.models import Attempt, Delivery, StatusChange, WebhookEndpoint
from webhooks.tasks import deliver_due

DAY = datetime.timedelta(days=1)


def failed_deliveries(endpoint, emit_event, created, count, *, attempted=None) -> list[str]:
    """`count` events created at `created`, each attempted once in this process at
    `attempted` (default: then), without a broker message."""
    ids = []
    for n in range(count):
        with time_machine.travel(created, tick=False):
            event = emit_event(obj=payment_object(f"pay_01J0000000000000000000E{n:03d}"))
        with time_machine.travel(attempted or created, tick=False):
            delivery = Delivery.objects.create(
                event=event, endpoint=endpoint, next_attempt_at=timezone.now()
            )
            delivery_run(delivery.id)
        ids.append(delivery.id)
    return ids


def numbering_continued(delivery_id: str) -> bool:
    """Attempts 1..n of the delivery, the last one delivered after the failures before it."""
    attempts = list(Attempt.objects.filter(delivery_id=delivery_id).order_by("attempt"))
    numbers = [a.attempt for a in attempts]
    return (
        numbers == list(range(1, len(numbers) + 1))
        and len(numbers) >= 2
        and ([a.status for a in attempts][-1] == "delivered")
    )


def test_the_worker_disables_a_failing_endpoint_and_re_enabling_delivers_its_held_retries(
    worker, receiver, api, emit_event, merchant
):
    response = api.post("/v1/webhook-endpoints", {"url": receiver.url()}, format="json")
    endpoint = WebhookEndpoint.objects.get(pk=response.json()["id"])
    receiver.reply.status = 500
    now = timezone.now()
    held = failed_deliveries(endpoint, emit_event, now - 6 * DAY, 10)
    held += failed_deliveries(endpoint, emit_event, now - 3 * DAY + datetime.timedelta(hours=1), 1)
    (warning,) = mail.outbox  # sent by this process: 3 days of failure
    assert "failing" in warning.subject

    emit_committed(merchant)  # the worker's attempt fails: 5 days, 2 days after the warning
    wait_for(lambda: WebhookEndpoint.objects.get(pk=endpoint.pk).disabled_at is not None)
    assert api.get(f"/v1/webhook-endpoints/{endpoint.id}").json()["status"] == "disabled"
    change = StatusChange.objects.get(action="disabled")
    assert change.actor == "system" and "held" in change.detail
    wait_for(lambda: not Delivery.objects.filter(endpoint=endpoint, status="pending").exists())
    held_now = set(
        Delivery.objects.filter(endpoint=endpoint, status="held").values_list("pk", flat=True)
    )
    assert held_now >= set(held)  # and the worker's own, whose retry was pending
    held = list(held_now)

    receiver.reply.status = 200
    receiver.requests.clear()
    emit_committed(merchant)  # no delivery for a disabled endpoint
    enabled = api.post(f"/v1/webhook-endpoints/{endpoint.id}/enable")
    assert enabled.status_code == 200 and enabled.json()["status"] == "enabled"
    deliver_due()  # the beat tick: nudges the held retries, now due, to the worker

    wait_for(lambda: Delivery.objects.filter(pk__in=held, status="delivered").count() == len(held))
    assert len({r.headers["Service-Event-Id"] for r in receiver.requests}) == len(held)
    assert all(numbering_continued(delivery_id) for delivery_id in held)
    health = api.get(f"/v1/webhook-endpoints/{endpoint.id}").json()["health"]
    assert health["consecutive_failures"] == 0 and health["last_hour"]["success_rate"] == 1.0


def test_recover_sends_the_dead_letters_again_through_the_worker(worker, receiver, api, emit_event):
    response = api.post("/v1/webhook-endpoints", {"url": receiver.url()}, format="json")
    endpoint = WebhookEndpoint.objects.get(pk=response.json()["id"])
    receiver.reply.status = 503
    since = timezone.now() - 5 * DAY
    # Created 4 days ago, attempted now: past the 72 h, dead-lettered at once.
    dead = failed_deliveries(endpoint, emit_event, since + DAY, 3, attempted=timezone.now())
    assert Delivery.objects.filter(pk__in=dead, status="dead_lettered").count() == 3
    receiver.reply.status = 200
    receiver.requests.clear()

    recovered = api.post(
        f"/v1/webhook-endpoints/{endpoint.id}/recover", {"since": since.isoformat()}, format="json"
    )

    assert recovered.status_code == 202 and recovered.json()["requeued"] == 3
    wait_for(lambda: Delivery.objects.filter(pk__in=dead, status="delivered").count() == 3)
    events = set(Delivery.objects.filter(pk__in=dead).values_list("event_id", flat=True))
    assert {r.headers["Service-Event-Id"] for r in receiver.requests} == events
    assert all(numbering_continued(delivery_id) for delivery_id in dead)
