"""POST /v1/payments/:id/refunds and GET /v1/refunds/:id (spec "Endpoints", "Refund object",
"Payment transitions" refund rows, Errors, Limits)."""

import uuid

import pytest

from events.models import Event
from refunds.models import Refund
from tests.payments.support import APPROVED, create, created, error_of, event_types
from tests.refunds.support import OUTCOME, captured_payment, payment_of, refund, refunded

REFUND_FIELDS = {
    "id", "object", "payment", "amount", "currency", "status", "reason", "failure_code", "fee",
    "metadata", "livemode", "created",
}  # fmt: skip


def test_a_full_refund_by_default(api):
    payment = captured_payment(api, amount=1000)
    body = refunded(api, payment["id"], reason="Returned mug", metadata={"rma": "7"})
    assert set(body) == REFUND_FIELDS
    assert body["id"].startswith("ref_") and body["object"] == "refund"
    assert (body["payment"], body["amount"], body["currency"]) == (payment["id"], 1000, "eur")
    assert (body["status"], body["failure_code"]) == ("succeeded", None)
    assert (body["reason"], body["metadata"], body["livemode"]) == (
        "Returned mug",
        {"rma": "7"},
        False,
    )
    assert body["fee"] == {"amount": 0, "currency": "eur", "breakdown": {"fixed": 0}}
    after = payment_of(api, payment["id"])
    assert (after["status"], after["amount_refunded"]) == ("refunded", 1000)
    assert api.get(f"/v1/refunds/{body['id']}").json() == body


def test_events_refund_created_then_succeeded_carry_the_refund(api):
    payment = captured_payment(api)
    body = refunded(api, payment["id"])
    events = Event.objects.filter(resource_id=body["id"]).order_by("id")
    assert [event.type for event in events] == ["refund.created", "refund.succeeded"]
    assert all(event.data == {"object": body, "previous_attributes": {}} for event in events)
    # The payment's move to refunded is reported by refund.succeeded (no payment.* type).
    assert event_types(payment["id"]) == ["payment.created", "payment.captured"]


def test_partial_refunds_up_to_the_captured_amount(api):
    payment = captured_payment(api, amount=1000)
    refunded(api, payment["id"], amount=300)
    middle = payment_of(api, payment["id"])
    assert (middle["status"], middle["amount_refunded"]) == ("partially_refunded", 300)
    refunded(api, payment["id"], amount=200)
    assert refunded(api, payment["id"])["amount"] == 500  # the rest
    final = payment_of(api, payment["id"])
    assert (final["status"], final["amount_refunded"]) == ("refunded", 1000)
    error = error_of(
        refund(api, payment["id"], amount=1), 422, "processing_error", "payment_not_refundable"
    )
    assert "refunded" in error["message"]


def test_over_refunding_is_400_amount_exceeds_refundable(api):
    payment = captured_payment(api, amount=1000)
    error = error_of(
        refund(api, payment["id"], amount=1001),
        400,
        "validation_error",
        "amount_exceeds_refundable",
    )
    assert error["param"] == "amount"
    refunded(api, payment["id"], amount=600)
    error_of(
        refund(api, payment["id"], amount=401), 400, "validation_error", "amount_exceeds_refundable"
    )
    assert Refund.objects.count() == 1


def test_a_partial_capture_refunds_only_what_was_captured(api):
    payment = created(api, APPROVED, capture_method="manual", amount=1000)
    api.post(f"/v1/payments/{payment['id']}/captures", {"amount": 600}, format="json")
    error_of(
        refund(api, payment["id"], amount=601), 400, "validation_error", "amount_exceeds_refundable"
    )
    assert refunded(api, payment["id"])["amount"] == 600
    assert payment_of(api, payment["id"])["status"] == "refunded"


@pytest.mark.parametrize(
    "number, fields",
    [
        (APPROVED, {"capture_method": "manual"}),  # authorized
        (None, {}),  # pending
        ("4000000000009995", {}),  # declined
        ("4000000000000119", {}),  # failed
    ],
)
def test_a_payment_not_captured_is_not_refundable(api, number, fields):
    response = create(api, number, **fields)
    payment_id = Event.objects.filter(type="payment.created").get().resource_id
    assert response.status_code in (201, 402, 422)
    error = error_of(refund(api, payment_id), 422, "processing_error", "payment_not_refundable")
    assert payment_of(api, payment_id)["status"] in error["message"]
    assert not Refund.objects.exists()


@pytest.mark.parametrize(
    "body, param",
    [
        ({"amount": 0}, "amount"),
        ({"amount": -5}, "amount"),
        ({"amount": 10.0}, "amount"),
        ({"amount": "100"}, "amount"),
        ({"amount": 2**53}, "amount"),
        ({"reason": "r" * 201}, "reason"),
        ({"reason": 7}, "reason"),
        ({"metadata": {f"k{i}": "v" for i in range(51)}}, "metadata"),
        ({"metadata": {"k" * 41: "v"}}, "metadata"),  # not the key itself: any length
        ({"metadata": {"k": "v" * 501}}, "metadata.k"),
        ({"metadata": {"k": ["list"]}}, "metadata.k"),
        ({"metadata": {"k": "a\x00b"}}, "metadata.k"),  # jsonb cannot hold it: was a 500
        ({"reason": "a\x00b"}, "reason"),
    ],
)
def test_limits_are_validated_with_the_right_param(api, body, param):
    payment = captured_payment(api)
    response = refund(api, payment["id"], **body)
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == param
    assert not Refund.objects.exists()


def test_reason_of_200_characters_and_50_metadata_keys_are_accepted(api):
    payment = captured_payment(api)
    metadata = {f"k{i}": "v" * 500 for i in range(50)}
    body = refunded(api, payment["id"], reason="r" * 200, metadata=metadata)
    assert len(body["reason"]) == 200 and body["metadata"] == metadata


def test_other_merchants_and_modes_get_404(api, other_api, live_api):
    payment = captured_payment(api)
    body = refunded(api, payment["id"], amount=100)
    for client in (other_api, live_api):
        error_of(refund(client, payment["id"]), 404, "not_found_error", "resource_not_found")
        error_of(
            client.get(f"/v1/refunds/{body['id']}"), 404, "not_found_error", "resource_not_found"
        )
    error_of(
        api.get("/v1/refunds/ref_01J00000000000000000000000"),
        404,
        "not_found_error",
        "resource_not_found",
    )
    assert Refund.objects.count() == 1


@pytest.mark.parametrize("refund_id", ["ref_%00", "%00", "pay_01J00000000000000000000000"])
def test_a_malformed_refund_id_is_404(api, refund_id):
    error_of(api.get(f"/v1/refunds/{refund_id}"), 404, "not_found_error", "resource_not_found")


@pytest.mark.parametrize("path", ["/v1/refunds", "/v1/refunds/"])
def test_there_is_no_refund_list(api, path):
    error_of(api.get(path), 404, "not_found_error", "unrecognized_request_url")


def test_publishable_key_cannot_refund(api, publishable_api):
    payment = captured_payment(api)
    error_of(
        refund(publishable_api, payment["id"]), 403, "authorization_error", "secret_key_required"
    )


def test_a_replayed_refund_is_the_same_refund(api):
    payment = captured_payment(api)
    headers = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}
    path = f"/v1/payments/{payment['id']}/refunds"
    first = api.post(path, {"amount": 100}, format="json", **headers)
    again = api.post(path, {"amount": 100}, format="json", **headers)
    assert first.status_code == again.status_code == 201
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    assert Refund.objects.count() == 1


def test_a_refund_fee_comes_from_the_pricing_schedule(api, merchant):
    merchant.pricing = {"type": "blended", "rate_bps": 140, "refund_fixed": {"eur": 15}}
    merchant.save()
    payment = captured_payment(api)
    body = refunded(api, payment["id"], amount=100)
    assert body["fee"] == {"amount": 15, "currency": "eur", "breakdown": {"fixed": 15}}
    assert payment_of(api, payment["id"])["fees"]["amount"] == 14  # the payment's fees stay


def test_a_failed_refund_changes_nothing_on_the_payment(api):
    payment = captured_payment(api)
    body = refunded(api, payment["id"], metadata={OUTCOME: "failed:expired_or_canceled_card"})
    assert (body["status"], body["failure_code"], body["fee"]) == (
        "failed",
        "expired_or_canceled_card",
        None,
    )
    assert event_types(body["id"]) == ["refund.created", "refund.failed"]
    after = payment_of(api, payment["id"])
    assert (after["status"], after["amount_refunded"]) == ("captured", 0)
    assert refunded(api, payment["id"])["amount"] == 1000  # still wholly refundable


def test_a_malformed_override_is_400_and_nothing_is_written(api):
    payment = captured_payment(api)
    response = refund(api, payment["id"], metadata={OUTCOME: "failed:bad_luck"})
    error = error_of(response, 400, "validation_error", "invalid_parameter")
    assert error["param"] == f"metadata.{OUTCOME}"
    assert (
        not Refund.objects.exists()
        and not Event.objects.filter(type__startswith="refund.").exists()
    )


def test_card_data_in_a_refund_is_refused_before_anything(api):
    payment = captured_payment(api)
    response = refund(api, payment["id"], metadata={"note": "4242 4242 4242 4242"})
    error = error_of(response, 400, "validation_error", "raw_card_data_not_allowed")
    assert error["param"] == "metadata.note" and not Refund.objects.exists()
