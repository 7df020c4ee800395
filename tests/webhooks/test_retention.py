"""Events past EVENT_RETENTION go with their deliveries and attempts; anything younger, or
with a delivery still pending, stays (docs/data.md "Retention")."""

import datetime

import pytest
import time_machine
from django.utils import timezone

from events.models import Event
from tests.factories import id_made_now
from webhooks.models import Attempt, Delivery
from webhooks.retention import events_purge
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def endpoint(merchant, loopback_allowed):
    return endpoint_create(
        merchant=merchant, livemode=False, url="https://127.0.0.1:9/hook"
    ).endpoint


def event_with_delivery(endpoint, status: str) -> Event:
    """An event, its delivery in `status` and one attempt, made at the current (travelled) time."""
    event = Event.objects.create(
        id=id_made_now("evt"),
        merchant=endpoint.merchant,
        livemode=False,
        type="payment.captured",
        api_version="2026-08-19",
        resource_id="pay_01J0000000000000000000000A",
        data={"object": {"id": "pay_01J0000000000000000000000A"}},
        dispatched_at=timezone.now(),
    )
    delivery = Delivery.objects.create(event=event, endpoint=endpoint, status=status)
    Attempt.objects.create(
        delivery=delivery,
        event=event,
        endpoint=endpoint,
        attempt=1,
        status=Attempt.Status.FAILED,
        http_status=500,
        duration_ms=3,
        attempted_at=timezone.now(),
    )
    return event


def days_ago(days: float):
    return time_machine.travel(timezone.now() - datetime.timedelta(days=days), tick=False)


def test_events_past_retention_go_with_their_deliveries_and_attempts(settings, endpoint):
    settings.EVENT_RETENTION = datetime.timedelta(days=30)
    with days_ago(31):
        delivered = event_with_delivery(endpoint, Delivery.Status.DELIVERED)
        dead = event_with_delivery(endpoint, Delivery.Status.DEAD_LETTERED)
        still_pending = event_with_delivery(endpoint, Delivery.Status.PENDING)
    with days_ago(29):
        young = event_with_delivery(endpoint, Delivery.Status.DELIVERED)

    assert events_purge() == 2

    kept = {young.pk, still_pending.pk}
    assert set(Event.objects.values_list("pk", flat=True)) == kept
    assert set(Delivery.objects.values_list("event_id", flat=True)) == kept
    assert set(Attempt.objects.values_list("event_id", flat=True)) == kept
    assert not Event.objects.filter(pk__in=[delivered.pk, dead.pk]).exists()


def test_an_event_with_no_delivery_goes_too(settings, merchant):
    settings.EVENT_RETENTION = datetime.timedelta(days=3)
    with days_ago(4):
        Event.objects.create(
            id=id_made_now("evt"),
            merchant=merchant,
            livemode=True,
            type="payment.created",
            api_version="2026-08-19",
            resource_id="pay_x",
            data={},
        )
    assert events_purge() == 1
    assert not Event.objects.exists()


def test_a_backlog_is_deleted_in_batches(settings, merchant):
    """Retention switched on over months of events: each batch is its own short transaction,
    and the run takes them all (the time budget is not reached here)."""
    settings.EVENT_RETENTION = datetime.timedelta(days=30)
    with days_ago(60):
        Event.objects.bulk_create(
            Event(
                id=id_made_now("evt"),
                merchant=merchant,
                livemode=False,
                type="payment.created",
                api_version="2026-08-19",
                resource_id=f"pay_{n}",
                data={},
            )
            for n in range(2_500)
        )
    assert events_purge(batch=1_000) == 2_500
    assert not Event.objects.exists()
