"""Stripe's events in (processors/stripe/webhooks.py, processors/stripe/events.py): signed as
Stripe signs them, checked by Stripe's own library, kept once, applied through the services,
never moving a status backwards (docs/processors.md "Processor webhooks")."""

import datetime
import json
import time

import pytest
import requests
from django.utils import timezone

from events.models import Event
from payments.models import Dispute, Operation
from payments.states import Status
from processors.models import ProcessorEvent, ProcessorObject
from processors.objects import Kind, link
from refunds.states import RefundStatus
from tests.factories import PaymentFactory, RefundFactory
from tests.processors.conftest import (
    WEBHOOK_SECRET,
    event_body,
    stripe_event,
    stripe_signature,
    webhook_path,
)

pytestmark = pytest.mark.django_db


def deliver(client, account, event: dict, *, secret=WEBHOOK_SECRET, body=None, signature=None):
    body = event_body(event) if body is None else body
    headers = {"HTTP_STRIPE_SIGNATURE": signature or stripe_signature(body, secret)}
    return client.post(webhook_path(account), body, content_type="application/json", **headers)


def captured_payment(account, pi="pi_1", charge="ch_1", **traits):
    payment = PaymentFactory(merchant=account.merchant, livemode=True, captured=True, **traits)
    link(Kind.PAYMENT, payment.id, account, pi, charge=charge)
    return payment


def stripe_dispute(dispute_id="du_1", pi="pi_1", charge="ch_1", status="needs_response"):
    return {
        "id": dispute_id,
        "object": "dispute",
        "amount": 1000,
        "currency": "eur",
        "charge": charge,
        "payment_intent": pi,
        "reason": "fraudulent",
        "status": status,
    }


def events_of(payment_or_dispute_id) -> list[str]:
    return list(
        Event.objects.filter(resource_id=payment_or_dispute_id)
        .order_by("id")
        .values_list("type", flat=True)
    )


# --- signatures ----------------------------------------------------------------------------


def forgeries(body: bytes) -> dict[str, dict]:
    """Every way a delivery can fail the signature check: (body, Stripe-Signature)."""
    stale = int(time.time()) - 600  # Stripe's library tolerates 5 minutes
    return {
        "another secret": {"signature": stripe_signature(body, "whsec_someone_else")},
        "a modified body": {
            "body": body.replace(b"fraudulent", b"duplicate"),
            "signature": stripe_signature(body, WEBHOOK_SECRET),
        },
        "a stale timestamp": {"signature": stripe_signature(body, WEBHOOK_SECRET, stale)},
        "a header with no v1": {"signature": "t=1,v0=abc"},
        "a header that is no header": {"signature": "garbage"},
    }


@pytest.mark.parametrize(
    "forgery",
    [
        "another secret",
        "a modified body",
        "a stale timestamp",
        "a header with no v1",
        "a header that is no header",
    ],
)
def test_a_forged_event_is_400_and_changes_nothing(client, stripe_account, forgery):
    payment = captured_payment(stripe_account)
    event = stripe_event("charge.dispute.created", stripe_dispute())
    forged = forgeries(event_body(event))[forgery]
    response = deliver(client, stripe_account, event, **forged)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_signature"
    payment.refresh_from_db()
    assert payment.status == Status.CAPTURED
    assert not ProcessorEvent.objects.exists() and not Dispute.objects.exists()


def test_an_event_without_a_signature_is_400(client, stripe_account):
    body = event_body(stripe_event("payment_intent.succeeded", {"id": "pi_1"}))
    response = client.post(webhook_path(stripe_account), body, content_type="application/json")
    assert response.status_code == 400
    assert not ProcessorEvent.objects.exists()


def test_a_signed_body_that_is_not_json_is_400(client, stripe_account):
    body = b"not json"
    response = deliver(client, stripe_account, {}, body=body)
    assert response.status_code == 400
    assert not ProcessorEvent.objects.exists()


def test_the_previous_secret_signs_until_it_expires(client, stripe_account, time_machine):
    stripe_account.previous_webhook_secret_encrypted = stripe_account.webhook_secret_encrypted
    stripe_account.previous_webhook_secret_expires_at = timezone.now() + datetime.timedelta(hours=1)
    stripe_account.set_credentials(webhook_secret="whsec_svc_test_rolled")
    stripe_account.save()
    event = stripe_event("customer.created", {"id": "cus_1"})
    assert deliver(client, stripe_account, event).status_code == 200  # the previous secret
    time_machine.move_to(timezone.now() + datetime.timedelta(hours=2), tick=False)
    # Signed now (the clock moved), with the previous secret: no longer accepted.
    body = event_body(stripe_event("customer.created", {"id": "cus_2"}))
    signature = stripe_signature(body, WEBHOOK_SECRET, int(timezone.now().timestamp()))
    assert deliver(client, stripe_account, {}, body=body, signature=signature).status_code == 400


def test_a_body_over_the_bound_is_refused_unread(client, stripe_account):
    body = b'{"id": "evt_big", "padding": "' + b"x" * (300 * 1024) + b'"}'
    response = deliver(client, stripe_account, {}, body=body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "request_too_large"


# --- accounts ------------------------------------------------------------------------------


def test_an_unknown_account_is_404(client, stripe_account):
    event = stripe_event("customer.created", {"id": "cus_1"})
    body = event_body(event)
    response = client.post(
        "/processors/stripe/webhooks/cacct_unknown",
        body,
        content_type="application/json",
        HTTP_STRIPE_SIGNATURE=stripe_signature(body, WEBHOOK_SECRET),
    )
    assert response.status_code == 404
    assert not ProcessorEvent.objects.exists()


def test_a_revoked_account_is_404(client, stripe_account):
    stripe_account.revoked_at = timezone.now()
    stripe_account.save()
    response = deliver(client, stripe_account, stripe_event("customer.created", {"id": "cus_1"}))
    assert response.status_code == 404
    assert not ProcessorEvent.objects.exists()


def test_the_endpoint_takes_posts_only(client, stripe_account):
    assert client.get(webhook_path(stripe_account)).status_code == 405


# --- once each -----------------------------------------------------------------------------


def test_an_unhandled_type_is_recorded_and_does_nothing(client, stripe_account):
    event = stripe_event("customer.created", {"id": "cus_1"})
    response = deliver(client, stripe_account, event)
    assert response.status_code == 200
    recorded = ProcessorEvent.objects.get()
    assert (recorded.event_id, recorded.type, recorded.object_id) == (
        event["id"],
        "customer.created",
        "cus_1",
    )
    assert recorded.result == "not handled"


def test_a_redelivery_answers_200_and_changes_nothing(client, stripe_account):
    payment = captured_payment(stripe_account)
    event = stripe_event("charge.dispute.created", stripe_dispute())
    assert deliver(client, stripe_account, event).status_code == 200
    again = deliver(client, stripe_account, event)
    assert again.status_code == 200 and again.json()["result"] == "already received"
    assert Dispute.objects.count() == 1 and ProcessorEvent.objects.count() == 1
    assert events_of(Dispute.objects.get().id) == ["dispute.created"]
    payment.refresh_from_db()
    assert payment.status == Status.DISPUTED


# --- payments ------------------------------------------------------------------------------


def test_an_event_for_an_unknown_payment_intent_is_recorded_as_such(client, stripe_account):
    response = deliver(
        client, stripe_account, stripe_event("payment_intent.succeeded", {"id": "pi_x"})
    )
    assert response.status_code == 200
    assert ProcessorEvent.objects.get().result == "unknown PaymentIntent pi_x"


@pytest.mark.parametrize(
    "traits",
    [
        {"captured": True},
        {"captured": True, "status": Status.REFUNDED},
        {"status": Status.CANCELED},
        {"status": Status.DECLINED},
    ],
)
@pytest.mark.parametrize(
    "type_",
    ["payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.canceled"],
)
def test_a_late_payment_event_never_moves_a_settled_payment(client, stripe_account, traits, type_):
    payment = PaymentFactory(merchant=stripe_account.merchant, livemode=True, **traits)
    link(Kind.PAYMENT, payment.id, stripe_account, "pi_1")
    before = payment.status
    response = deliver(client, stripe_account, stripe_event(type_, {"id": "pi_1"}))
    assert response.status_code == 200
    assert response.json()["result"] == f"{payment.id} already {before}: nothing to do"
    payment.refresh_from_db()
    assert payment.status == before and events_of(payment.id) == []


def test_a_payment_busy_with_another_call_is_503_and_left_for_the_redelivery(
    client, stripe_account
):
    payment = PaymentFactory(merchant=stripe_account.merchant, livemode=True, processing=True)
    link(Kind.PAYMENT, payment.id, stripe_account, "pi_1")
    in_flight = Operation.objects.create(
        kind=Operation.Kind.RESOLVE, payment_id=payment.id, request={}
    )
    event = stripe_event("payment_intent.succeeded", {"id": "pi_1"})
    busy = deliver(client, stripe_account, event)
    assert busy.status_code == 503
    assert busy.json()["error"]["code"] == "processor_event_deferred"
    assert not ProcessorEvent.objects.exists()  # Stripe sends it again
    # The call in flight lands its answer; the redelivery finds nothing left to do.
    Operation.objects.filter(pk=in_flight.pk).update(state=Operation.State.APPLIED)
    payment.status = Status.CAPTURED
    payment.save()
    again = deliver(client, stripe_account, event)
    assert again.status_code == 200
    assert ProcessorEvent.objects.get().result == f"{payment.id} already captured: nothing to do"


# --- refunds -------------------------------------------------------------------------------


def test_a_refund_event_for_a_settled_refund_changes_nothing(client, stripe_account):
    refund = RefundFactory(
        payment__merchant=stripe_account.merchant, payment__livemode=True, status="succeeded"
    )
    link(Kind.REFUND, refund.id, stripe_account, "re_1")
    charge = {
        "id": "ch_1",
        "object": "charge",
        "refunds": {"data": [{"id": "re_1"}, {"id": "re_x"}]},
    }
    response = deliver(client, stripe_account, stripe_event("charge.refunded", charge))
    assert response.status_code == 200
    assert response.json()["result"] == f"{refund.id} already succeeded; unknown refund re_x"
    refund.refresh_from_db()
    assert refund.status == RefundStatus.SUCCEEDED


def test_a_refund_event_for_an_unknown_refund_is_recorded(client, stripe_account):
    event = stripe_event("refund.updated", {"id": "re_x", "object": "refund"})
    assert deliver(client, stripe_account, event).status_code == 200
    assert ProcessorEvent.objects.get().result == "unknown refund re_x"


# --- disputes ------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_dispute_sent_over_http_disputes_the_payment_and_emits_dispute_created(
    live_server, stripe_account
):
    payment = captured_payment(stripe_account, pi="pi_1", charge="ch_1")
    body = event_body(stripe_event("charge.dispute.created", stripe_dispute()))
    response = requests.post(
        live_server.url + webhook_path(stripe_account),
        data=body,
        headers={
            "Content-Type": "application/json",
            "Stripe-Signature": stripe_signature(body, WEBHOOK_SECRET),
        },
        timeout=10,
    )
    assert response.status_code == 200, response.text
    payment.refresh_from_db()
    assert payment.status == Status.DISPUTED
    dispute = Dispute.objects.get()
    assert dispute.id.startswith("dp_")
    assert ProcessorObject.objects.get(kind=Kind.DISPUTE).processor_id == "du_1"
    (event,) = Event.objects.filter(type="dispute.created")
    assert event.livemode and event.merchant_id == payment.merchant_id
    assert event.data["object"] == {
        "id": dispute.id,
        "object": "dispute",
        "payment": payment.id,
        "amount": 1000,
        "currency": "eur",
        "reason": "fraudulent",
        "status": "needs_response",
        "livemode": True,
        "created": event.data["object"]["created"],
    }
    assert response.json()["result"] == f"{dispute.id} opened: {payment.id} disputed"


def test_a_dispute_is_found_by_its_charge_when_it_names_no_payment_intent(client, stripe_account):
    payment = captured_payment(stripe_account, pi="pi_1", charge="ch_7")
    obj = {**stripe_dispute(charge="ch_7"), "payment_intent": None}
    response = deliver(client, stripe_account, stripe_event("charge.dispute.created", obj))
    assert response.status_code == 200
    payment.refresh_from_db()
    assert payment.status == Status.DISPUTED


def test_a_refunded_payment_can_be_disputed(client, stripe_account):
    payment = captured_payment(stripe_account, status=Status.REFUNDED)
    deliver(client, stripe_account, stripe_event("charge.dispute.created", stripe_dispute()))
    payment.refresh_from_db()
    assert payment.status == Status.DISPUTED


def test_a_second_event_for_the_same_dispute_changes_nothing(client, stripe_account):
    captured_payment(stripe_account)
    deliver(client, stripe_account, stripe_event("charge.dispute.created", stripe_dispute()))
    second = deliver(
        client, stripe_account, stripe_event("charge.dispute.created", stripe_dispute())
    )
    dispute = Dispute.objects.get()
    assert second.json()["result"] == f"{dispute.id} already known"
    assert events_of(dispute.id) == ["dispute.created"]


@pytest.mark.parametrize("traits", [{"authorized": True}, {"status": Status.CANCELED}])
def test_a_payment_that_took_no_money_is_not_disputed(client, stripe_account, traits):
    payment = PaymentFactory(merchant=stripe_account.merchant, livemode=True, **traits)
    link(Kind.PAYMENT, payment.id, stripe_account, "pi_1")
    before = payment.status
    response = deliver(
        client, stripe_account, stripe_event("charge.dispute.created", stripe_dispute())
    )
    assert response.status_code == 200
    assert response.json()["result"] == "refused: payment_not_disputable"
    payment.refresh_from_db()
    assert payment.status == before and not Dispute.objects.exists()


def test_a_dispute_on_an_unknown_charge_is_recorded(client, stripe_account):
    obj = stripe_dispute(pi="pi_x", charge="ch_x")
    response = deliver(client, stripe_account, stripe_event("charge.dispute.created", obj))
    assert response.status_code == 200
    assert response.json()["result"] == "unknown charge ch_x"


@pytest.mark.parametrize(
    "stripe_status, ours, closing",
    [
        ("won", "won", ["dispute.won", "dispute.closed"]),
        ("warning_closed", "won", ["dispute.won", "dispute.closed"]),
        ("lost", "lost", ["dispute.lost", "dispute.closed"]),
    ],
)
def test_a_closed_dispute_is_won_or_lost(client, stripe_account, stripe_status, ours, closing):
    payment = captured_payment(stripe_account)
    deliver(client, stripe_account, stripe_event("charge.dispute.created", stripe_dispute()))
    closed = stripe_event("charge.dispute.closed", stripe_dispute(status=stripe_status))
    assert deliver(client, stripe_account, closed).status_code == 200
    dispute = Dispute.objects.get()
    assert dispute.status == ours
    assert events_of(dispute.id) == ["dispute.created", *closing]
    payment.refresh_from_db()
    assert payment.status == Status.DISPUTED  # its history: decision, docs/processors.md
    # Closed again (a second event): nothing more.
    deliver(client, stripe_account, stripe_event("charge.dispute.closed", stripe_dispute()))
    assert events_of(dispute.id) == ["dispute.created", *closing]


def test_a_dispute_closed_before_its_created_event_is_opened_then_closed(client, stripe_account):
    payment = captured_payment(stripe_account)
    closed = stripe_event("charge.dispute.closed", stripe_dispute(status="lost"))
    assert deliver(client, stripe_account, closed).status_code == 200
    dispute = Dispute.objects.get()
    assert events_of(dispute.id) == ["dispute.created", "dispute.lost", "dispute.closed"]
    # The created event, late: nothing more.
    deliver(client, stripe_account, stripe_event("charge.dispute.created", stripe_dispute()))
    assert Dispute.objects.get().status == "lost"
    assert events_of(dispute.id) == ["dispute.created", "dispute.lost", "dispute.closed"]
    payment.refresh_from_db()
    assert payment.status == Status.DISPUTED


def test_dispute_events_are_json_serialisable(client, stripe_account):
    captured_payment(stripe_account)
    deliver(client, stripe_account, stripe_event("charge.dispute.created", stripe_dispute()))
    json.dumps(Event.objects.get(type="dispute.created").data)
