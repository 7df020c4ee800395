"""Per-resource ordered delivery (docs/webhooks.md "Ordering") against a real HTTPS receiver
on loopback: a resource's later events wait for its earlier ones, other resources' flow.

Delivery is driven as the workers do it (`deliveries_drain`, the beat's `deliver_due`) in the
test process; time moves with time-machine."""

import datetime
import json

import pytest
import time_machine
from django.db import transaction
from django.utils import timezone

from events.models import Event
from events.services import emit_all
from tests.webhooks.conftest import payment_object
from tests.webhooks.receiver import Reply
from webhooks.attempts import deliveries_drain
from webhooks.models import Delivery
from webhooks.services import endpoint_create, endpoint_update
from webhooks.tasks import deliver_due

pytestmark = pytest.mark.django_db
A, B = "pay_01J0000000000000000000000A", "pay_01J0000000000000000000000B"
DRAIN = 120  # seconds a drain may go on: a budget on a loaded machine, not an assertion


def drain() -> None:
    deliveries_drain(livemode=False, seconds=DRAIN)


def arrived(receiver, path="/hooks") -> list[tuple[str, int]]:
    """(event id, status answered) in arrival order, of the requests to `path`."""
    return [(json.loads(r.body)["id"], r.status) for r in receiver.requests if r.path == path]


def status_of(event, endpoint) -> str:
    return Delivery.objects.get(event=event, endpoint=endpoint).status


def test_a_failing_first_event_holds_back_its_resource_only_then_the_rest_follow_in_order(
    receiver, merchant, emit_event
):
    ordered = endpoint_create(
        merchant=merchant, livemode=False, url=receiver.url(), ordered_delivery=True
    ).endpoint
    endpoint_create(merchant=merchant, livemode=False, url=receiver.url("/all"))
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        a1, a2, a3, b1, b2 = history_of(emit_event)
        versions = [Event.objects.get(pk=e.pk).resource_version for e in (a1, a2, a3, b1, b2)]
        assert versions == [1, 2, 3, 1, 2]
        receiver.replies[a1.id] = Reply(status=500)
        drain()

        # A's later events wait at the ordered endpoint; B's arrive; the unordered one gets all.
        assert arrived(receiver) == [(a1.id, 500), (b1.id, 200), (b2.id, 200)]
        assert [status_of(e, ordered) for e in (a2, a3)] == ["blocked", "blocked"]
        unordered_got = {event_id for event_id, _ in arrived(receiver, "/all")}
        assert unordered_got == {a1.id, a2.id, a3.id, b1.id, b2.id}

        # A's first event succeeds on its retry: A's others follow it, in order.
        del receiver.replies[a1.id]
        clock.move_to(start + datetime.timedelta(seconds=11))
        drain()
    assert arrived(receiver)[3:] == [(a1.id, 200), (a2.id, 200), (a3.id, 200)]
    assert {status_of(e, ordered) for e in (a1, a2, a3, b1, b2)} == {"delivered"}


def history_of(emit_event):
    """Payment A created, authorized, captured, then payment B created and captured, each
    event fanned out in its own transaction as a service writes it."""

    def emit(payment_id, type, status):
        return emit_event(type, payment_object(payment_id, status), hooks=True)

    return (
        emit(A, "payment.created", "pending"),
        emit(A, "payment.authorized", "authorized"),
        emit(A, "payment.captured", "captured"),
        emit(B, "payment.created", "pending"),
        emit(B, "payment.captured", "captured"),
    )


def test_a_dead_lettered_first_event_lets_the_next_go(receiver, endpoint_for, emit_event):
    endpoint, _ = endpoint_for(receiver, ordered_delivery=True)
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        a1, a2, a3, _, _ = history_of(emit_event)
        receiver.replies[a1.id] = Reply(status=503)
        drain()
        # Past the retry window: a1's next failure is its last.
        clock.move_to(start + datetime.timedelta(hours=73))
        drain()
    assert status_of(a1, endpoint) == "dead_lettered"
    assert arrived(receiver)[-3:] == [(a1.id, 503), (a2.id, 200), (a3.id, 200)]


def test_the_beat_releases_what_a_crashed_worker_left_blocked(receiver, endpoint_for, emit_event):
    endpoint, _ = endpoint_for(receiver, ordered_delivery=True)
    a1, a2, a3, _, _ = history_of(emit_event)
    # The worker recorded a1's delivery and died before releasing a2.
    Delivery.objects.filter(event=a1, endpoint=endpoint).update(
        status=Delivery.Status.DELIVERED, next_attempt_at=None
    )
    assert status_of(a2, endpoint) == "blocked"
    deliver_due()
    assert (status_of(a2, endpoint), status_of(a3, endpoint)) == ("pending", "blocked")
    drain()
    of_a = [event_id for event_id, _ in arrived(receiver) if event_id in {a1.id, a2.id, a3.id}]
    assert of_a == [a2.id, a3.id]


def test_events_of_one_transaction_wait_for_each_other(receiver, endpoint_for, merchant):
    endpoint, _ = endpoint_for(receiver, ordered_delivery=True)
    with transaction.atomic():
        created, captured = emit_all(
            merchant=merchant,
            livemode=False,
            types=["payment.created", "payment.captured"],
            obj=payment_object(A),
        )
    assert (status_of(created, endpoint), status_of(captured, endpoint)) == ("pending", "blocked")
    drain()
    assert arrived(receiver) == [(created.id, 200), (captured.id, 200)]


def test_switching_ordering_off_lets_the_waiting_events_go(receiver, endpoint_for, emit_event):
    endpoint, _ = endpoint_for(receiver, ordered_delivery=True)
    a1, a2, a3, _, _ = history_of(emit_event)
    receiver.reply = Reply(status=500)
    drain()
    assert status_of(a2, endpoint) == "blocked"
    endpoint_update(endpoint=endpoint, actor="test", ordered_delivery=False)
    assert status_of(a2, endpoint) == status_of(a3, endpoint) == "pending"
