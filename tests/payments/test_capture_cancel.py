"""POST /v1/payments/:id/captures and /cancel, refusals included."""

import pytest

from events.models import Event
from tests.payments.support import APPROVED, CHALLENGE, created, error_of, event_types


def authorized(api, **fields):
    return created(api, APPROVED, capture_method="manual", **fields)


def capture(api, payment_id, **body):
    return api.post(f"/v1/payments/{payment_id}/captures", body, format="json")


def cancel(api, payment_id):
    return api.post(f"/v1/payments/{payment_id}/cancel", format="json")


def test_full_capture(api):
    payment = authorized(api, amount=2500)
    response = capture(api, payment["id"])
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["amount_captured"]) == ("captured", 2500)
    assert body["fees"]["amount"] == 2500 * 140 // 10000 + 25 and body["captured_at"]
    assert event_types(payment["id"])[-1] == "payment.captured"


def test_partial_capture_releases_the_rest_and_cannot_be_repeated(api):
    payment = authorized(api, amount=2500)
    body = capture(api, payment["id"], amount=1000).json()
    assert (body["status"], body["amount"], body["amount_captured"]) == ("captured", 2500, 1000)
    assert body["fees"]["breakdown"]["mdr"] == 14
    assert event_types(payment["id"])[-1] == "payment.partially_captured"
    again = capture(api, payment["id"], amount=500)
    error_of(again, 422, "processing_error", "payment_not_capturable")


def test_fees_are_snapshotted_once(api, merchant):
    payment = authorized(api)
    captured = capture(api, payment["id"]).json()
    merchant.pricing = {"type": "blended", "rate_bps": 900}
    merchant.save()
    assert api.get(f"/v1/payments/{payment['id']}").json()["fees"] == captured["fees"]


def test_interchange_plus_schedule_at_capture(api, merchant):
    merchant.pricing = {
        "type": "interchange_plus",
        "markup_bps": 20,
        "fixed": {"eur": 10},
        "scheme_bps": {"visa": 30},
    }
    merchant.save()
    fees = created(api, APPROVED, amount=10_000)["fees"]
    assert fees == {
        "amount": 60,
        "currency": "eur",
        "breakdown": {"mdr": 20, "fixed": 10, "scheme": 30},
    }


@pytest.mark.parametrize("amount, param", [(2501, "amount"), (0, "amount"), ("10", "amount")])
def test_capture_amount_is_validated(api, amount, param):
    payment = authorized(api, amount=2500)
    response = capture(api, payment["id"], amount=amount)
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == param
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "authorized"


def test_capturing_a_captured_payment(api):
    payment = created(api, APPROVED)
    error = error_of(capture(api, payment["id"]), 422, "processing_error", "payment_not_capturable")
    assert "captured" in error["message"]


def test_a_refused_capture_keeps_the_authorization(api):
    payment = authorized(api, metadata={"_svc_test_refuse_capture": True})
    error_of(capture(api, payment["id"]), 422, "processing_error", "capture_failed")
    after = api.get(f"/v1/payments/{payment['id']}").json()
    assert (after["status"], after["amount_captured"], after["fees"]) == ("authorized", 0, None)
    assert event_types(payment["id"])[-1] == "payment.capture_failed"
    event = Event.objects.get(resource_id=payment["id"], type="payment.capture_failed")
    assert event.data["object"]["status"] == "authorized"


def test_cancel_voids_an_authorization(api):
    payment = authorized(api)
    response = cancel(api, payment["id"])
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "canceled" and body["canceled_at"]
    assert event_types(payment["id"])[-1] == "payment.canceled"


def test_cancel_pending_and_requires_action(api):
    pending = created(api, None)
    assert cancel(api, pending["id"]).json()["status"] == "canceled"
    challenged = created(api, CHALLENGE)
    body = cancel(api, challenged["id"]).json()
    assert body["status"] == "canceled" and "next_action" not in body


def test_a_refused_void_leaves_the_payment_authorized(api):
    payment = authorized(api, metadata={"_svc_test_refuse_void": True})
    error_of(cancel(api, payment["id"]), 422, "processing_error", "void_failed")
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "authorized"
    assert event_types(payment["id"]) == ["payment.created", "payment.authorized"]


def test_captured_and_terminal_payments_cannot_be_canceled(api):
    captured = created(api, APPROVED)
    error_of(cancel(api, captured["id"]), 422, "processing_error", "payment_not_cancelable")
    canceled = created(api, None)
    cancel(api, canceled["id"])
    error_of(cancel(api, canceled["id"]), 422, "processing_error", "payment_not_cancelable")


def test_override_flags_must_be_booleans(api):
    payment = authorized(api, metadata={"_svc_test_refuse_capture": "yes"})
    error = error_of(capture(api, payment["id"]), 400, "validation_error", "invalid_parameter")
    assert error["param"] == "metadata._svc_test_refuse_capture"


def test_other_merchant_cannot_capture_or_cancel(api, other_api):
    payment = authorized(api)
    error_of(capture(other_api, payment["id"]), 404, "not_found_error", "resource_not_found")
    error_of(cancel(other_api, payment["id"]), 404, "not_found_error", "resource_not_found")


@pytest.mark.parametrize(
    "raw, code", [(b"{", "invalid_json"), (b"[]", "invalid_parameter"), (b"5", "invalid_parameter")]
)
@pytest.mark.parametrize("action", ["cancel", "captures"])
def test_a_body_that_is_not_a_json_object_is_400_and_nothing_happens(api, raw, code, action):
    """Spec "Errors > Types": a body that is not valid JSON is 400 validation_error, also on
    cancel, which takes no body (the body used to be ignored and the payment voided)."""
    payment = authorized(api)
    response = api.generic(
        "POST", f"/v1/payments/{payment['id']}/{action}", raw, content_type="application/json"
    )
    error_of(response, 400, "validation_error", code)
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "authorized"
