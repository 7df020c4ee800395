"""manage.py resend_event / requeue_dead_letters and the admin pages, over the same services."""

import datetime
import json
from io import StringIO

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.utils import timezone

from events.models import Event
from webhooks.attempts import delivery_run
from webhooks.fanout import events_fan_out
from webhooks.models import Delivery
from webhooks.selectors import dead_letter_batches, dead_letters

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def dead_letter(event):
    (delivery_id,) = events_fan_out([event.id])
    Delivery.objects.filter(pk=delivery_id).update(
        status="dead_lettered", next_attempt_at=None, attempt_count=8
    )
    Event.objects.filter(pk=event.id).update(dead_lettered_at=timezone.now())
    return delivery_id


def test_resend_event_continues_the_numbering(receiver, endpoint_for, emit_event):
    endpoint, _ = endpoint_for(receiver)
    event = emit_event()
    delivery_id = events_fan_out([event.id])[0]
    delivery_run(delivery_id)
    out = json.loads(run("resend_event", event.id, "--endpoint", endpoint.id, "--json"))
    assert out == {"event": event.id, "deliveries": [delivery_id]}
    assert delivery_run(delivery_id).attempt == 2


def test_resend_event_refusals(receiver, endpoint_for, emit_event):
    endpoint_for(receiver, enabled_events=["refund.*"])
    event = emit_event("payment.captured")
    with pytest.raises(CommandError, match="no_matching_endpoint"):
        run("resend_event", event.id)
    with pytest.raises(CommandError, match="No event"):
        run("resend_event", "evt_01J00000000000000000000000")
    with pytest.raises(CommandError, match="resource_not_found"):
        run("resend_event", event.id, "--endpoint", "whe_01J00000000000000000000000")


def test_requeue_dead_letters_dry_runs_unless_for_real(
    receiver, endpoint_for, emit_event, other_merchant
):
    endpoint_for(receiver)
    old, new = emit_event(), emit_event()
    Event.objects.filter(pk=old.id).update(created=timezone.now() - datetime.timedelta(days=5))
    old_id, new_id = dead_letter(old), dead_letter(new)
    dry = run("requeue_dead_letters")
    assert "Would requeue 2 dead letter(s)" in dry and "--for-real" in dry
    assert Delivery.objects.filter(status="dead_lettered").count() == 2

    since = (timezone.now() - datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (
        json.loads(run("requeue_dead_letters", "--merchant", other_merchant.id, "--json"))[
            "dead_letters"
        ]
        == []
    )
    out = json.loads(run("requeue_dead_letters", "--since", since, "--for-real", "--json"))
    assert out["requeued"] is True and [d["event"] for d in out["dead_letters"]] == [new.id]
    assert Delivery.objects.get(pk=new_id).status == "pending"
    assert Delivery.objects.get(pk=old_id).status == "dead_lettered"
    assert delivery_run(new_id).attempt == 9
    with pytest.raises(CommandError, match="--since"):
        run("requeue_dead_letters", "--since", "yesterday")


def test_requeue_dead_letters_works_in_batches_each_row_once(receiver, endpoint_for, emit_event):
    """Two endpoints, so a batch of 3 ends between an event's two dead letters: the next batch
    starts after that (event, endpoint) key, and every dead letter is requeued once."""
    endpoint_for(receiver)
    endpoint_for(receiver)
    events = [emit_event() for _ in range(3)]
    for event in events:
        Delivery.objects.filter(pk__in=events_fan_out([event.id])).update(
            status="dead_lettered", next_attempt_at=None, attempt_count=8
        )
    dead = list(dead_letters().values_list("event_id", "endpoint_id"))
    assert len(dead) == 6
    batches = [
        [(d.event_id, d.endpoint_id) for d in batch] for batch in dead_letter_batches(size=3)
    ]
    assert batches == [dead[:3], dead[3:]]

    out = json.loads(run("requeue_dead_letters", "--batch-size", "3", "--for-real", "--json"))
    assert [(d["event"], d["endpoint"]) for d in out["dead_letters"]] == dead
    assert not Delivery.objects.filter(status="dead_lettered").exists()
    assert Delivery.objects.filter(status="pending").count() == 6
    with pytest.raises(CommandError, match="--batch-size"):
        run("requeue_dead_letters", "--batch-size", "0")


@pytest.fixture
def staff_client(client):
    # force_login: the login throttle (django-axes) needs the request that client.login lacks.
    client.force_login(
        User.objects.create_superuser(
            "support", "support@example.test", "a long and unlikely passphrase"
        )
    )
    return client


def test_admin_shows_endpoints_without_secrets_and_events_with_attempts(
    staff_client, receiver, endpoint_for, emit_event
):
    endpoint, secret = endpoint_for(receiver)
    event = emit_event()
    attempt = delivery_run(events_fan_out([event.id])[0])
    page = staff_client.get(f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/")
    assert page.status_code == 200
    assert secret not in page.content.decode() and endpoint.secret_encrypted not in (
        page.content.decode()
    )
    page = staff_client.get(f"/admin/events/event/{event.pk}/change/").content.decode()
    assert attempt.id in page


def test_admin_dead_letter_view_resends(staff_client, receiver, endpoint_for, emit_event):
    endpoint_for(receiver)
    delivered = emit_event()
    delivery_run(events_fan_out([delivered.id])[0])
    dead = emit_event()
    dead_id = dead_letter(dead)
    listing = staff_client.get("/admin/webhooks/deadletter/").content.decode()
    assert dead.id in listing and delivered.id not in listing
    selected = {"action": "resend_dead_letters", "_selected_action": [dead_id]}
    asked = staff_client.post("/admin/webhooks/deadletter/", selected)
    assert "Yes, requeue dead letters" in asked.content.decode()
    assert Delivery.objects.get(pk=dead_id).status == "dead_lettered"
    response = staff_client.post(
        "/admin/webhooks/deadletter/", {**selected, "confirmed": "yes"}, follow=True
    )
    assert "Requeue dead letters: 1 done." in response.content.decode()
    assert LogEntry.objects.get(object_id=dead_id).get_change_message().startswith("Requeued")
    assert delivery_run(dead_id).status == "delivered"
    assert Event.objects.get(pk=dead.id).dead_lettered_at is None


def test_admin_resends_an_event_after_confirming_and_logs_it(
    staff_client, receiver, endpoint_for, emit_event
):
    endpoint_for(receiver)
    event = emit_event()
    (delivery_id,) = events_fan_out([event.id])
    delivery_run(delivery_id)
    staff_client.post(
        "/admin/events/event/",
        {"action": "resend_events", "_selected_action": [event.id], "confirmed": "yes"},
    )
    assert LogEntry.objects.get(object_id=event.id).get_change_message() == (
        f"Resent: deliveries {delivery_id} queued."
    )
    assert delivery_run(delivery_id).attempt == 2
