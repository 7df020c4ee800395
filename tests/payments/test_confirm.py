"""POST /v1/payments/:id/confirm: the two-step flow gives any outcome of create."""

import pytest

from events.models import Event
from tests.payments.support import (
    APPROVED,
    ASYNC,
    CHALLENGE,
    INSUFFICIENT_FUNDS,
    PROCESSING_ERROR,
    confirm,
    created,
    error_of,
    event_types,
    payment_id_in,
    tokenize,
)


def test_confirm_captures_a_pending_payment(api):
    pending = created(api, None)
    response = confirm(api, pending["id"])
    assert response.status_code == 200
    payment = response.json()
    assert payment["status"] == "captured" and payment["method"]["card"]["last4"] == "4242"
    assert event_types(pending["id"]) == ["payment.created", "payment.captured"]


def test_confirm_event_names_what_changed(api):
    pending = created(api, None)
    confirm(api, pending["id"])
    event = Event.objects.get(resource_id=pending["id"], type="payment.captured")
    previous = event.data["previous_attributes"]
    assert previous["status"] == "pending" and previous["amount_captured"] == 0
    assert previous["fees"] is None and "reference" not in previous


def test_confirm_manual_gives_authorized(api):
    pending = created(api, None, capture_method="manual")
    assert confirm(api, pending["id"]).json()["status"] == "authorized"


def test_confirm_to_a_challenge(api):
    pending = created(api, None, return_url="https://shop.example/back")
    payment = confirm(api, pending["id"], CHALLENGE).json()
    assert payment["status"] == "requires_action"
    assert payment["next_action"]["redirect"]["return_url"] == "https://shop.example/back"


def test_confirm_to_processing(api):
    pending = created(api, None)
    assert confirm(api, pending["id"], ASYNC).json()["status"] == "processing"
    assert event_types(pending["id"]) == ["payment.created", "payment.processing"]


def test_confirm_decline_is_the_same_402(api):
    pending = created(api, None)
    error = error_of(
        confirm(api, pending["id"], INSUFFICIENT_FUNDS), 402, "card_error", "card_declined"
    )
    assert error["decline_code"] == "insufficient_funds"
    assert payment_id_in(error) == pending["id"]
    assert api.get(f"/v1/payments/{pending['id']}").json()["status"] == "declined"


def test_confirm_failure_is_the_same_422(api):
    pending = created(api, None)
    error = error_of(
        confirm(api, pending["id"], PROCESSING_ERROR), 422, "processing_error", "payment_failed"
    )
    assert payment_id_in(error) == pending["id"]


def test_only_pending_payments_can_be_confirmed(api):
    captured = created(api, APPROVED)
    token = tokenize(api)
    body = {"payment_method": {"type": "card", "token": token}}
    response = api.post(f"/v1/payments/{captured['id']}/confirm", body, format="json")
    error = error_of(response, 422, "processing_error", "payment_not_confirmable")
    assert "captured" in error["message"]
    second = created(api, None)
    assert api.post(f"/v1/payments/{second['id']}/confirm", body, format="json").status_code == 200


@pytest.mark.parametrize(
    "body, param",
    [
        ({}, "payment_method"),
        ({"payment_method": {"type": "card"}}, "payment_method.token"),
        ({"payment_method": {"type": "bitcoin", "token": "tok_x"}}, "payment_method.type"),
    ],
)
def test_confirm_validates_its_body(api, body, param):
    pending = created(api, None)
    response = api.post(f"/v1/payments/{pending['id']}/confirm", body, format="json")
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == param


def test_confirm_with_another_method_type_is_refused(api):
    pending = created(api, None)
    response = confirm(api, pending["id"], method_type="apple_pay")
    assert (
        error_of(response, 400, "validation_error", "invalid_parameter")["param"]
        == "payment_method.type"
    )


def test_confirm_with_an_unknown_token(api):
    pending = created(api, None)
    body = {"payment_method": {"type": "card", "token": "tok_nope"}}
    response = api.post(f"/v1/payments/{pending['id']}/confirm", body, format="json")
    error_of(response, 400, "validation_error", "token_invalid")


def test_another_merchants_payment_is_404(api, other_api):
    pending = created(api, None)
    error_of(confirm(other_api, pending["id"]), 404, "not_found_error", "resource_not_found")
