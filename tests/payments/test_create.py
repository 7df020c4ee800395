"""POST /v1/payments (spec "Endpoints > Payments"): the outcome carried by the HTTP status."""

import datetime
import json

import pytest

from events.models import Event
from payments.models import Payment, Token
from tests.payments.support import (
    APPROVED,
    ASYNC,
    CHALLENGE,
    CHALLENGE_DECLINE,
    GENERIC_DECLINE,
    INSUFFICIENT_FUNDS,
    LOST_CARD,
    MASTERCARD,
    PROCESSING_ERROR,
    create,
    created,
    error_of,
    event_types,
    payment_body,
    payment_id_in,
    tokenize,
)

PAYMENT_FIELDS = {
    "id", "object", "status", "amount", "amount_captured", "amount_refunded", "currency",
    "reference", "description", "capture_method", "method", "customer", "outcome", "fees",
    "return_url", "statement_descriptor", "metadata", "livemode", "created", "authorized_at",
    "captured_at", "canceled_at",
}  # fmt: skip
OUTCOME_FIELDS = {
    "response_code", "decline_code", "decline_is_soft", "avs_result", "cvv_result", "three_ds",
    "sca_exemption", "risk_score", "risk_decision",
}  # fmt: skip


@pytest.mark.parametrize(
    "number, status, event",
    [
        (APPROVED, "captured", "payment.captured"),
        (MASTERCARD, "captured", "payment.captured"),
        (CHALLENGE, "requires_action", "payment.requires_action"),
        (CHALLENGE_DECLINE, "requires_action", "payment.requires_action"),
        (ASYNC, "processing", "payment.processing"),
    ],
)
def test_cards_that_answer_201(api, number, status, event):
    payment = created(api, number, return_url="https://shop.example/back")
    assert payment["status"] == status
    assert set(payment) - {"next_action"} == PAYMENT_FIELDS
    assert set(payment["outcome"]) == OUTCOME_FIELDS
    assert ("next_action" in payment) is (status == "requires_action")
    assert event_types(payment["id"]) == ["payment.created", event]


def test_approved_automatic_is_captured_with_fees_and_timestamps(api):
    payment = created(api, APPROVED, amount=1000)
    assert payment["amount_captured"] == 1000 and payment["amount_refunded"] == 0
    assert payment["outcome"]["response_code"] == "00"
    assert payment["fees"] == {
        "amount": 39,
        "currency": "eur",
        "breakdown": {"mdr": 14, "fixed": 25, "scheme": 0},
    }
    assert payment["authorized_at"] and payment["captured_at"] and payment["canceled_at"] is None
    card = payment["method"]["card"]
    assert card["last4"] == "4242" and card["bin"] == "424242" and card["brand"] == "visa"
    assert (card["issuer_country"], card["funding"], card["network_token"]) == (
        "EE",
        "credit",
        False,
    )
    assert "wallet" not in payment["method"] and "details" not in payment["method"]


def test_manual_capture_stops_at_authorized_without_fees(api):
    payment = created(api, APPROVED, capture_method="manual")
    assert (payment["status"], payment["amount_captured"], payment["fees"]) == (
        "authorized",
        0,
        None,
    )
    assert payment["authorized_at"] and payment["captured_at"] is None
    assert event_types(payment["id"]) == ["payment.created", "payment.authorized"]


def test_without_a_token_the_payment_waits_pending(api):
    payment = created(api, None)
    assert payment["status"] == "pending" and payment["method"]["card"] is None
    assert payment["outcome"]["response_code"] is None
    assert event_types(payment["id"]) == ["payment.created"]


@pytest.mark.parametrize(
    "number, decline_code, soft",
    [
        (INSUFFICIENT_FUNDS, "insufficient_funds", True),
        (GENERIC_DECLINE, "generic_decline", False),
        (LOST_CARD, "lost_card", False),
    ],
)
def test_declines_are_402_and_the_payment_exists(api, number, decline_code, soft):
    error = error_of(create(api, number), 402, "card_error", "card_declined")
    assert error["decline_code"] == decline_code
    assert decline_code in error["message"] and ("soft" if soft else "hard") in error["message"]
    payment = api.get(f"/v1/payments/{payment_id_in(error)}").json()
    assert payment["status"] == "declined"
    assert payment["outcome"]["decline_code"] == decline_code
    assert payment["outcome"]["decline_is_soft"] is soft
    assert payment["outcome"]["response_code"] not in (None, "00")
    assert event_types(payment["id"]) == ["payment.created", "payment.declined"]


def test_processing_error_is_422_payment_failed_and_the_payment_exists(api):
    error = error_of(create(api, PROCESSING_ERROR), 422, "processing_error", "payment_failed")
    payment = api.get(f"/v1/payments/{payment_id_in(error)}").json()
    assert payment["status"] == "failed" and payment["outcome"]["decline_code"] is None
    assert event_types(payment["id"]) == ["payment.created", "payment.failed"]


def test_outcome_data_varies_with_the_card(api):
    visa, mastercard = created(api, APPROVED), created(api, MASTERCARD)
    assert visa["outcome"]["risk_score"] != mastercard["outcome"]["risk_score"]
    assert visa["outcome"]["sca_exemption"] == "transaction_risk_analysis"
    assert mastercard["outcome"]["three_ds"] == {
        "status": "frictionless",
        "eci": "02",
        "version": "2.2.0",
    }


def test_event_payload_is_the_payment_as_the_api_returns_it(api):
    payment = created(api, APPROVED)
    events = Event.objects.filter(resource_id=payment["id"]).order_by("id")
    assert [event.data["object"] for event in events] == [payment, payment]
    assert all(event.data["previous_attributes"] == {} for event in events)
    assert {event.api_version for event in events} == {"2026-08-19"}


@pytest.mark.parametrize("wallet", ["apple_pay", "google_pay"])
def test_wallets_pay_with_a_token_of_their_type(api, wallet):
    payment = created(api, APPROVED, method_type=wallet)
    assert payment["method"]["type"] == wallet and payment["method"]["wallet"] == wallet
    assert payment["method"]["card"]["network_token"] is True


def test_a_token_of_another_type_is_token_invalid(api):
    token = tokenize(api, APPROVED, type="apple_pay")
    response = api.post("/v1/payments", payment_body(token), format="json")
    error = error_of(response, 400, "validation_error", "token_invalid")
    assert error["param"] == "payment_method.token"


def test_unknown_token_is_token_invalid(api):
    body = payment_body("tok_01J00000000000000000000000")
    error = error_of(
        api.post("/v1/payments", body, format="json"), 400, "validation_error", "token_invalid"
    )
    assert error["param"] == "payment_method.token"


def test_a_token_is_single_use(api):
    token = tokenize(api)
    assert api.post("/v1/payments", payment_body(token), format="json").status_code == 201
    again = api.post("/v1/payments", payment_body(token), format="json")
    assert (
        "already been used" in error_of(again, 400, "validation_error", "token_invalid")["message"]
    )


def test_a_token_expires_after_15_minutes(api, time_machine):
    time_machine.move_to(datetime.datetime(2030, 1, 1, 12, 0, tzinfo=datetime.UTC), tick=False)
    token = tokenize(api)
    time_machine.shift(datetime.timedelta(minutes=15))
    response = api.post("/v1/payments", payment_body(token), format="json")
    assert "expired" in error_of(response, 400, "validation_error", "token_invalid")["message"]


def test_another_merchants_token_is_unknown(api, other_api):
    token = tokenize(other_api)
    error_of(
        api.post("/v1/payments", payment_body(token), format="json"),
        400,
        "validation_error",
        "token_invalid",
    )


def test_live_payment_without_a_live_connector_is_no_route(live_api):
    response = live_api.post("/v1/payments", payment_body(), format="json")
    error_of(response, 422, "processing_error", "no_route")
    assert not Payment.objects.exists()


def test_publishable_key_cannot_pay(publishable_api):
    response = publishable_api.post("/v1/payments", payment_body(), format="json")
    error_of(response, 403, "authorization_error", "secret_key_required")


def test_amount_above_the_account_limit(api, merchant):
    merchant.transaction_limit = 5000
    merchant.save()
    assert created(api, APPROVED, amount=5000)["status"] == "captured"
    token = tokenize(api)
    response = api.post("/v1/payments", payment_body(token, amount=5001), format="json")
    error_of(response, 422, "processing_error", "amount_above_limit")
    assert Token.objects.get(pk=token).used_at is None  # nothing was spent


def test_customer_is_stored_and_only_an_id_shows(api):
    details = {"email": "ann@example.test", "billing_address": {"country": "ee", "city": "Tartu"}}
    anonymous = created(api, APPROVED, customer=details)
    assert anonymous["customer"] is None
    stored = Payment.objects.get(pk=anonymous["id"]).customer_details
    assert stored["billing_address"]["country"] == "EE" and stored["email"] == "ann@example.test"
    known = created(api, APPROVED, customer={"id": "cus_01J00000000000000000000000"})
    assert known["customer"] == "cus_01J00000000000000000000000"


def test_optional_fields_round_trip(api):
    payment = created(
        api,
        APPROVED,
        description="Two mugs",
        statement_descriptor="ACME* MUGS",
        return_url="https://shop.example/done",
        metadata={"order": "42", "gift": True, "n": 2, "none": None},
        currency="EUR",
    )
    assert payment["description"] == "Two mugs" and payment["statement_descriptor"] == "ACME* MUGS"
    assert payment["return_url"] == "https://shop.example/done" and payment["currency"] == "eur"
    assert payment["metadata"] == {"order": "42", "gift": True, "n": 2, "none": None}


@pytest.mark.parametrize(
    "change, param",
    [
        ({"amount": 0}, "amount"),
        ({"amount": 2**53}, "amount"),
        ({"amount": 10.0}, "amount"),
        ({"currency": "xyz"}, "currency"),
        ({"reference": ""}, "reference"),
        ({"reference": "r" * 65}, "reference"),
        ({"reference": 42}, "reference"),
        ({"description": "d" * 501}, "description"),
        ({"statement_descriptor": "A"}, "statement_descriptor"),
        ({"statement_descriptor": "S" * 23}, "statement_descriptor"),
        ({"statement_descriptor": "NO_UNDERSCORES"}, "statement_descriptor"),
        ({"statement_descriptor": 12345}, "statement_descriptor"),  # a string, not coerced
        ({"statement_descriptor": "SHOP\n"}, "statement_descriptor"),  # `$` let this through
        ({"metadata": {f"k{i}": "v" for i in range(51)}}, "metadata"),
        ({"metadata": {"k" * 41: "v"}}, "metadata"),  # not the key itself: any length
        ({"metadata": {"k": "v" * 501}}, "metadata.k"),
        # Values PostgreSQL's jsonb cannot hold were a 500 after the row was half-written.
        ({"metadata": {"k": "a\x00b"}}, "metadata.k"),
        ({"metadata": {"a\x00b": "v"}}, "metadata"),
        ({"capture_method": "later"}, "capture_method"),
        ({"payment_method": {"type": "cash"}}, "payment_method.type"),
        ({"payment_method": {}}, "payment_method.type"),
        ({"customer": {"billing_address": {"city": "Tartu"}}}, "customer.billing_address.country"),
        ({"customer": {"billing_address": {"country": "EST"}}}, "customer.billing_address.country"),
        ({"customer": {"id": "bob"}}, "customer.id"),
        ({"return_url": "http://shop.example/back"}, "return_url"),
        ({"return_url": "not a url"}, "return_url"),
        ({"return_url": "https://shop.example/" + "x" * 2048}, "return_url"),
    ],
)
def test_limits_are_validated_with_the_right_param(api, change, param):
    response = api.post("/v1/payments", {**payment_body(), **change}, format="json")
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == param
    assert not Payment.objects.exists()


@pytest.mark.parametrize("field", ["amount", "currency", "reference", "payment_method"])
def test_required_fields(api, field):
    body = payment_body()
    del body[field]
    response = api.post("/v1/payments", body, format="json")
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == field


def test_reference_is_not_unique(api):
    first, second = created(api, APPROVED), created(api, APPROVED)
    assert first["reference"] == second["reference"] and first["id"] != second["id"]


def test_a_malformed_pricing_schedule_fails_before_anything_is_spent(api, merchant):
    merchant.pricing = {"type": "flat"}
    merchant.save()
    token = tokenize(api)
    api.raise_request_exception = False
    response = api.post("/v1/payments", payment_body(token), format="json")
    error_of(response, 500, "api_error", "internal_error")
    assert Token.objects.get(pk=token).used_at is None and not Payment.objects.exists()


@pytest.mark.parametrize(
    "metadata_json",
    [
        '{"k": 1e400}',  # parses as infinity: no JSON (and no jsonb) form
        '{"k": "\\ud800"}',  # an unpaired surrogate escape: not Unicode text
        '{"\\udc00": "v"}',
    ],
)
def test_metadata_that_cannot_be_stored_is_400_and_nothing_is_written(api, metadata_json):
    body = json.dumps(payment_body(tokenize(api)))[:-1] + f', "metadata": {metadata_json}}}'
    response = api.generic("POST", "/v1/payments", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["type"] == "validation_error"
    assert not Payment.objects.exists()


def test_events_carry_the_version_in_force_for_the_request(api, settings):
    """Spec "Versioning" 2 and 4: `Service-Version` overrides the key's version per request,
    and the events that request writes carry it."""
    settings.SUPPORTED_API_VERSIONS = ("2026-08-19", "2027-01-01")
    token = tokenize(api)
    response = api.post(
        "/v1/payments",
        payment_body(token, capture_method="manual"),
        format="json",
        HTTP_SERVICE_VERSION="2027-01-01",
    )
    assert response["Service-Version"] == "2027-01-01"
    payment_id = response.json()["id"]
    api.post(f"/v1/payments/{payment_id}/captures", {}, format="json")  # the key's version
    api.post(
        f"/v1/payments/{payment_id}/refunds", {}, format="json", HTTP_SERVICE_VERSION="2027-01-01"
    )
    versions = list(Event.objects.order_by("id").values_list("type", "api_version"))
    assert versions == [
        ("payment.created", "2027-01-01"),
        ("payment.authorized", "2027-01-01"),
        ("payment.captured", "2026-08-19"),
        ("refund.created", "2027-01-01"),
        ("refund.succeeded", "2027-01-01"),
    ]
