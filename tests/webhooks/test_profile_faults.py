"""The webhook side of a test-mode failure profile (docs/sandbox.md "Failure profiles"):
duplicate, delayed and so reordered deliveries, against a real HTTPS receiver on loopback,
driven as the workers drive them (`deliveries_drain`) with time moved by time-machine."""

import datetime
import json
from functools import partial

import pytest
import time_machine
from django.db import transaction
from django.utils import timezone

from accounts.merchantfirst import MODE_PARAMETER, ModeFilter
from events.services import emit
from sandbox.models import FailureProfile
from sandbox.profiles import profile_set, webhook_faults, webhook_injected_at
from tests.payments.support import payment_body, tokenize
from tests.sandbox.test_failure_profile import profile_statements
from tests.webhooks.conftest import payment_object
from webhooks.attempts import deliveries_drain
from webhooks.models import Attempt, Delivery
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db
A = "pay_01J0000000000000000000000A"
CAPTURED = payment_object(A, "captured")
DRAIN = 120  # seconds a drain may go on: a budget on a loaded machine, not an assertion


def drain(livemode=False) -> None:
    deliveries_drain(livemode=livemode, seconds=DRAIN)


def arrived(receiver) -> list[str]:
    return [r.headers["Service-Event-Id"] for r in receiver.requests]


def signature_scheme(request) -> list[str]:
    return [part.split("=")[0] for part in request.headers["Service-Signature"].split(",")]


def emit_payment_event(emit_event, type, status, livemode=False):
    return emit_event(type, payment_object(A, status), livemode=livemode, hooks=True)


def test_a_duplicated_delivery_arrives_twice_with_the_same_event_id(
    receiver, endpoint_for, emit_event, merchant
):
    endpoint_for(receiver)
    profile_set(merchant=merchant, duplicate_share=1.0)
    event = emit_payment_event(emit_event, "payment.captured", "captured")
    drain()
    assert arrived(receiver) == [event.id, event.id]
    first, second = receiver.requests
    assert json.loads(first.body)["id"] == json.loads(second.body)["id"] == event.id
    assert signature_scheme(first) == signature_scheme(second)
    delivery = Delivery.objects.get(event=event)
    assert (delivery.injected, delivery.status, delivery.attempt_count) == (
        "duplicate",
        "delivered",
        2,
    )
    attempts = Attempt.objects.filter(delivery=delivery).order_by("attempt")
    assert [(a.attempt, a.status) for a in attempts] == [(1, "delivered"), (2, "delivered")]


def test_the_fault_is_marked_in_the_api_and_the_back_office(
    api, staff_client, receiver, endpoint_for, emit_event, merchant
):
    endpoint_for(receiver)
    plain = emit_payment_event(emit_event, "payment.authorized", "authorized")
    drain()
    profile_set(merchant=merchant, duplicate_share=1.0)
    duplicated = emit_payment_event(emit_event, "payment.captured", "captured")
    drain()
    for event, marks in ((plain, [None]), (duplicated, ["duplicate", "duplicate"])):
        attempts = api.get(f"/v1/events/{event.id}").json()["attempts"]
        assert [a["injected"] for a in attempts] == marks
    filters = {"merchant": merchant.id, MODE_PARAMETER: ModeFilter.TEST, "injected": "duplicate"}
    listed = staff_client.get("/admin/webhooks/delivery/", filters)
    page = listed.content.decode()
    assert listed.status_code == 200 and "injected: duplicate" in page
    assert duplicated.id in page and plain.id not in page


def drained_now_and_after(receiver, emitting, seconds: int):
    """Events `emitting()` writes (fanned out) and drained at once, then `seconds` later:
    (the events, the event ids arrived first, all arrived in order)."""
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        events = emitting()
        drain()
        first = arrived(receiver)
        clock.move_to(start + datetime.timedelta(seconds=seconds))
        drain()
    return events, first, arrived(receiver)


def test_a_delayed_delivery_is_first_due_later_holding_no_worker(
    receiver, endpoint_for, emit_event, merchant
):
    endpoint_for(receiver)
    profile_set(merchant=merchant, delay_share=1.0, delay_seconds=30)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        event = emit_payment_event(emit_event, "payment.captured", "captured")
    delivery = Delivery.objects.get(event=event)
    assert delivery.injected == "delayed"
    assert delivery.next_attempt_at == start + datetime.timedelta(seconds=30)
    assert delivery.enqueued_until is None  # no worker nudged to wait for it


def test_a_delayed_delivery_is_sent_once_due(receiver, endpoint_for, emit_event, merchant):
    endpoint_for(receiver)
    profile_set(merchant=merchant, delay_share=1.0, delay_seconds=30)
    emitting = partial(emit_payment_event, emit_event, "payment.captured", "captured")
    event, first, arrivals = drained_now_and_after(receiver, emitting, seconds=31)
    assert (first, arrivals) == ([], [event.id])


def test_a_delayed_earlier_event_arrives_after_its_resource_s_later_one(
    receiver, endpoint_for, emit_event, merchant
):
    endpoint_for(receiver)
    # From seed 0 the sequence's first point (0.0) is delayed, its second (0.618) is not.
    profile_set(merchant=merchant, delay_share=0.5, delay_seconds=5)

    def emitting():
        return (
            emit_payment_event(emit_event, "payment.created", "pending"),
            emit_payment_event(emit_event, "payment.captured", "captured"),
        )

    (created, captured), first, arrivals = drained_now_and_after(receiver, emitting, seconds=6)
    assert (first, arrivals) == ([captured.id], [captured.id, created.id])


def test_live_deliveries_never_draw(receiver, endpoint_for, emit_event, merchant):
    endpoint_for(receiver, livemode=True)
    profile_set(merchant=merchant, duplicate_share=1.0)
    event = emit_payment_event(emit_event, "payment.captured", "captured", livemode=True)
    drain(livemode=True)
    assert arrived(receiver) == [event.id]
    assert Delivery.objects.get(event=event).injected == ""
    assert FailureProfile.objects.get(merchant=merchant).webhook_draws == 0


def test_another_merchant_s_deliveries_are_untouched(receiver, merchant, other_merchant):
    profile_set(merchant=merchant, delay_share=1.0, delay_seconds=300)
    endpoint_create(merchant=other_merchant, livemode=False, url=receiver.url())
    with transaction.atomic():
        event = emit(merchant=other_merchant, livemode=False, type="payment.captured", obj=CAPTURED)
    drain()
    assert arrived(receiver) == [event.id]
    assert Delivery.objects.get(event=event).injected == ""


def test_a_thousand_deliveries_drawn_at_0_3_are_300_duplicates(merchant):
    profile_set(merchant=merchant, duplicate_share=0.3, delay_share=0.2, delay_seconds=10)
    faults = webhook_faults(merchant_id=merchant.pk, count=1000)
    kinds = [fault.kind if fault else None for fault in faults]
    assert abs(kinds.count("duplicate") - 300) <= 5
    assert abs(kinds.count("delayed") - 200) <= 5
    assert {f.delay for f in faults if f and f.kind == "delayed"} == {
        datetime.timedelta(seconds=10)
    }
    assert FailureProfile.objects.get(merchant=merchant).webhook_draws == 1000


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_any_thousand_webhook_draws_meet_the_share(seed):
    profile = FailureProfile(duplicate_share=0.3, seed=seed)
    for start in range(0, 20_000, 997):
        drawn = [webhook_injected_at(profile, n) for n in range(start, start + 1000)]
        assert abs(drawn.count("duplicate") - 300) <= 5


def test_a_merchant_without_webhook_shares_draws_nothing(merchant):
    profile_set(merchant=merchant, error_share=0.5)
    assert webhook_faults(merchant_id=merchant.pk, count=3) == [None, None, None]
    assert FailureProfile.objects.get(merchant=merchant).webhook_draws == 0


def test_the_api_sets_and_reads_back_the_webhook_shares(api):
    values = {"duplicate_share": 0.2, "delay_share": 0.3, "delay_seconds": 45}
    assert api.post("/v1/sandbox/failure-profile", values, format="json").status_code == 200
    body = api.get("/v1/sandbox/failure-profile").json()
    assert {name: body[name] for name in values} == values
    assert body["webhook_draws"] == 0


@pytest.mark.postgres  # the configuration revision the answers are cached under
def test_deliveries_pay_no_statement_for_the_profile_once_none_is_known(
    api, merchant, loopback_allowed
):
    endpoint_create(merchant=merchant, livemode=False, url="https://127.0.0.1:9/hook")
    # The first create asks for the authorization's and the deliveries' answers; the next
    # asks nothing (each of its deliveries' draws was an UPDATE finding no row).
    first = profile_statements(api, payment_body(tokenize(api)))
    assert len(first) == 2 and all(sql.startswith("SELECT") for sql in first), first
    assert profile_statements(api, payment_body(tokenize(api))) == []

    profile_set(merchant=merchant, duplicate_share=1.0)  # a new revision: asked again
    body = payment_body(tokenize(api))
    assert api.post("/v1/payments", body, format="json").status_code == 201
    assert FailureProfile.objects.get(merchant=merchant).webhook_draws == 2  # its two events
