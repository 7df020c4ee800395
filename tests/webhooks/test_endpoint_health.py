"""Endpoint health (docs/webhooks.md "Endpoint health and recovery"): the counters on every
endpoint answer, one warning then automatic disabling after sustained failure, held retries,
re-enabling, and one dead-letter digest per endpoint and period. Real HTTPS receiver on
loopback; the days of failure pass under time-machine."""

import datetime

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from tests.webhooks.conftest import payment_object
from webhooks.attempts import delivery_run
from webhooks.claims import due_delivery_ids
from webhooks.lifecycle import endpoint_disable
from webhooks.models import Attempt, Delivery, StatusChange, WebhookEndpoint
from webhooks.streaks import Streak
from webhooks.tasks import send_dead_letter_digests

pytestmark = pytest.mark.django_db
DAY = datetime.timedelta(days=1)
MIN_FAILURES = 10  # settings.WEBHOOK_HEALTH_MIN_FAILURES's default


def create_endpoint(api, receiver, **body) -> dict:
    response = api.post(
        "/v1/webhook-endpoints", {"url": receiver.next_url(), **body}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def endpoint_answer(api, endpoint_id: str) -> dict:
    response = api.get(f"/v1/webhook-endpoints/{endpoint_id}")
    assert response.status_code == 200, response.content
    return response.json()


def attempt_events(emit_event, count: int) -> list[str]:
    """`count` new events fanned out to the merchant's endpoints, each attempted once, as a
    worker would. -> their delivery ids."""
    delivery_ids = []
    for n in range(count):
        event = emit_event(obj=payment_object(f"pay_01J00000000000000000000{n:03d}"), hooks=True)
        for delivery in Delivery.objects.filter(event=event):
            delivery_run(delivery.id)
            delivery_ids.append(delivery.id)
    return delivery_ids


def test_every_endpoint_answer_carries_its_recent_health(api, receiver, emit_event):
    created = create_endpoint(api, receiver)
    assert created["health"]["consecutive_failures"] == 0
    assert created["health"]["last_hour"] == {"attempts": 0, "delivered": 0, "success_rate": None}
    receiver.reply.status, receiver.reply.body = 503, b"down"
    attempt_events(emit_event, 3)
    failing = endpoint_answer(api, created["id"])["health"]
    assert failing["consecutive_failures"] == 3 and failing["failing_since"] is not None
    assert failing["last_failure_http_status"] == 503
    assert failing["last_failure_error"].startswith("HTTP 503")
    assert failing["last_success_at"] is None
    receiver.reply.status = 200
    attempt_events(emit_event, 1)
    (listed,) = api.get("/v1/webhook-endpoints").json()["data"]
    health = listed["health"]
    assert health == endpoint_answer(api, created["id"])["health"]
    assert (health["consecutive_failures"], health["failing_since"]) == (0, None)
    assert health["last_success_at"] >= failing["last_failure_at"]
    for window in ("last_hour", "last_day"):
        assert health[window] == {"attempts": 4, "delivered": 1, "success_rate": 0.25}
    assert listed["status"] == "enabled"


def test_the_hour_window_forgets_what_the_day_remembers(api, receiver, emit_event):
    created = create_endpoint(api, receiver)
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        attempt_events(emit_event, 2)
        clock.shift(datetime.timedelta(hours=2))
        health = endpoint_answer(api, created["id"])["health"]
    assert health["last_hour"]["attempts"] == 0
    assert health["last_day"] == {"attempts": 2, "delivered": 2, "success_rate": 1.0}


def test_one_warning_then_disabled_after_days_of_failure(
    api, receiver, emit_event, merchant, settings
):
    created = create_endpoint(api, receiver)
    receiver.reply.status = 500
    start = timezone.now() - 6 * DAY
    with time_machine.travel(start, tick=False) as clock:
        attempt_events(emit_event, MIN_FAILURES)
        clock.shift(3 * DAY - datetime.timedelta(minutes=1))
        attempt_events(emit_event, 1)
        assert mail.outbox == []  # not yet 3 days
        clock.shift(datetime.timedelta(minutes=2))
        attempt_events(emit_event, 2)  # the second finds the warning sent
        (warning,) = mail.outbox
        assert warning.to == [merchant.email] and created["id"] in warning.subject
        assert "failing" in warning.subject and "svc_whsec_" not in warning.body
        warned = endpoint_answer(api, created["id"])
        assert warned["status"] == "enabled" and warned["health"]["warned_at"] is not None

        clock.shift(2 * DAY - datetime.timedelta(minutes=2))
        attempt_events(emit_event, 1)  # 5 days of failure, but not yet 2 days of notice
        assert endpoint_answer(api, created["id"])["status"] == "enabled"
        clock.shift(datetime.timedelta(minutes=2))
        waiting = attempt_events(emit_event, 1)  # its retry is pending when it is disabled
        disabled = endpoint_answer(api, created["id"])

    assert disabled["status"] == "disabled" and disabled["health"]["disabled_at"] is not None
    assert [m.subject for m in mail.outbox][1] == (
        f"Your webhook endpoint {created['id']} has been disabled"
    )
    assert len(mail.outbox) == 2
    assert Delivery.objects.get(pk=waiting[0]).status == "held"
    assert not Delivery.objects.filter(endpoint_id=created["id"], status="pending").exists()
    actions = list(StatusChange.objects.order_by("at").values_list("action", "actor"))
    assert actions == [("warned", "system"), ("disabled", "system")]
    # Listed still, and no new deliveries: the fan-out skips it.
    assert [e["id"] for e in api.get("/v1/webhook-endpoints").json()["data"]] == [created["id"]]
    event = emit_event(hooks=True)
    assert not Delivery.objects.filter(event=event).exists()


def test_no_warning_before_enough_failures_in_a_row(api, receiver, emit_event):
    """One stray failure days after the last delivery is not a failing endpoint."""
    create_endpoint(api, receiver)
    receiver.reply.status = 500
    with time_machine.travel(timezone.now() - 6 * DAY, tick=False) as clock:
        attempt_events(emit_event, MIN_FAILURES - 2)
        clock.shift(6 * DAY)
        attempt_events(emit_event, 1)
    assert mail.outbox == [] and not StatusChange.objects.exists()


def disable(endpoint_id: str) -> None:
    """As the delivery path does once the thresholds are passed (tested above)."""
    streak = Streak(MIN_FAILURES, timezone.now() - 6 * DAY, timezone.now() - 3 * DAY)
    endpoint = WebhookEndpoint.objects.get(pk=endpoint_id)
    assert endpoint_disable(endpoint, streak, timezone.now())


def test_a_retry_coming_round_after_the_disabling_is_held_not_sent(api, receiver, emit_event):
    created = create_endpoint(api, receiver)
    receiver.reply.status = 500
    (delivery_id,) = attempt_events(emit_event, 1)
    disable(created["id"])
    # In flight while it was disabled: its retry was recorded as pending after the hold.
    Delivery.objects.filter(pk=delivery_id).update(status="pending", next_attempt_at=timezone.now())
    assert delivery_run(delivery_id) is None
    assert Delivery.objects.get(pk=delivery_id).status == "held"
    assert len(receiver.requests) == 1  # only the first attempt, before the disabling


def test_a_disabled_endpoint_is_re_enabled_by_its_merchant_and_its_held_retries_go(
    api, other_api, receiver, emit_event
):
    created = create_endpoint(api, receiver)
    receiver.reply.status = 500
    (delivery_id,) = attempt_events(emit_event, 1)
    disable(created["id"])
    assert Delivery.objects.get(pk=delivery_id).status == "held"
    assert other_api.post(f"/v1/webhook-endpoints/{created['id']}/enable").status_code == 404
    receiver.reply.status = 200

    response = api.post(f"/v1/webhook-endpoints/{created['id']}/enable")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "enabled" and "secret" not in body
    assert (body["health"]["consecutive_failures"], body["health"]["failing_since"]) == (0, None)
    assert body["health"]["last_day"]["attempts"] == 0  # the counters start again
    assert body["health"]["last_failure_at"] is not None  # the facts stay
    assert due_delivery_ids() == [delivery_id]  # the beat tick nudges it
    attempt = delivery_run(delivery_id)
    assert (attempt.attempt, attempt.status) == (2, "delivered")  # numbering continues
    again = api.post(f"/v1/webhook-endpoints/{created['id']}/enable")
    assert again.status_code == 200 and again.json()["status"] == "enabled"
    actions = list(StatusChange.objects.order_by("at").values_list("action", "actor"))
    assert actions == [("disabled", "system"), ("enabled", "api")]


def test_re_enabling_counts_against_the_limit_of_sixteen(api, receiver):
    created = create_endpoint(api, receiver)
    disable(created["id"])
    for _ in range(16):  # a disabled endpoint is not an enabled one
        create_endpoint(api, receiver)
    response = api.post(f"/v1/webhook-endpoints/{created['id']}/enable")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "endpoint_limit_reached"
    assert endpoint_answer(api, created["id"])["status"] == "disabled"


def test_resend_and_simulate_refuse_a_disabled_endpoint(api, receiver, emit_event):
    created = create_endpoint(api, receiver)
    event = emit_event()
    disable(created["id"])
    for path, body in [
        (f"/v1/events/{event.id}/resend", {"endpoint": created["id"]}),
        ("/v1/sandbox/simulate-webhook", {"type": "payment.captured", "endpoint": created["id"]}),
    ]:
        response = api.post(path, body, format="json")
        assert response.status_code == 422, response.content
        error = response.json()["error"]
        assert (error["code"], error["param"]) == ("endpoint_disabled", "endpoint")
    assert not Attempt.objects.exists()


def test_dead_letters_come_as_one_digest_per_endpoint_and_period(
    api, webhook_ca, receiver, emit_event, merchant
):
    first = create_endpoint(api, receiver)
    second = create_endpoint(api, receiver, enabled_events=["refund.*"])
    receiver.reply.status = 500
    events = []
    with time_machine.travel(timezone.now() - 4 * DAY, tick=False):
        for n in range(3):
            events.append(emit_event(obj=payment_object(f"pay_01J0000000000000000000D{n:03d}")))
    for event in events:
        delivery = Delivery.objects.create(
            event=event, endpoint_id=first["id"], next_attempt_at=timezone.now()
        )
        delivery_run(delivery.id)  # past the 72 h: dead-lettered at once
    assert mail.outbox == []  # no email per event

    assert send_dead_letter_digests() == 1
    (digest,) = mail.outbox
    assert digest.to == [merchant.email] and digest.subject == (
        f"3 webhook events could not be delivered to {first['id']}"
    )
    assert all(event.id in digest.body for event in events)
    assert f"/v1/webhook-endpoints/{first['id']}/recover" in digest.body
    assert second["id"] not in digest.body
    assert send_dead_letter_digests() == 0  # nothing new since
    late = emit_event()
    Delivery.objects.create(event=late, endpoint_id=first["id"], status="dead_lettered")
    assert send_dead_letter_digests() == 0  # only the record statement counts dead letters
    assert len(mail.outbox) == 1


def test_the_digest_runs_on_the_beat_at_the_set_period(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["webhooks-dead-letter-digest"]
    assert entry["task"] == "webhooks.tasks.send_dead_letter_digests"
    assert entry["schedule"] == settings.WEBHOOK_DEAD_LETTER_DIGEST_SECONDS == 3600.0


def test_deleting_a_disabled_endpoint_cancels_its_held_deliveries(api, receiver, emit_event):
    created = create_endpoint(api, receiver)
    receiver.reply.status = 500
    (delivery_id,) = attempt_events(emit_event, 1)
    disable(created["id"])
    assert api.delete(f"/v1/webhook-endpoints/{created['id']}").status_code == 200
    assert Delivery.objects.get(pk=delivery_id).status == "canceled"
    assert api.get(f"/v1/webhook-endpoints/{created['id']}").status_code == 404
