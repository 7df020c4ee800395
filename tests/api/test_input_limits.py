"""Issue 20 item 5: every string input has a maximum length, an error quotes at most a short
prefix of a bad value, and an answer kept under an Idempotency-Key has a bounded size
(docs/api-conventions.md "String lengths")."""

import json

import pytest
from django.http import HttpResponse

from api.errors import MAX_MESSAGE_CHARS, ValidationFailed, quoted
from api.idempotency import MAX_STORED_ERROR_BYTES, idempotency_claim, idempotency_settle
from api.models import IdempotencyRecord
from tests.payments.support import created, error_of, payment_body, tokenize

HUGE = "x" * 100_000  # within the 256 KiB body limit, and nothing the card guard refuses
# An envelope quoting at most a prefix: type, code, a message, a param and a request id.
SMALL_ANSWER = 1000


def payment_with(**fields) -> dict:
    return payment_body("tok_" + "0" * 26, **fields)


CASES = {
    # the four, quoted whole before
    "currency": ("/v1/payments", payment_with(currency=HUGE), "currency"),
    "payment_method.type": ("/v1/payments", payment_with(method_type=HUGE), "payment_method.type"),
    "payment_method.token": (
        "/v1/payments",
        {**payment_with(), "payment_method": {"type": "card", "token": HUGE}},
        "payment_method.token",
    ),
    "simulate resource": (
        "/v1/sandbox/simulate-webhook",
        {"type": "payment.captured", "resource": "pay_" + HUGE},
        "resource",
    ),
    # DRF's ChoiceField quotes a bad choice whole
    "capture_method": ("/v1/payments", payment_with(capture_method=HUGE), "capture_method"),
    "simulate type": ("/v1/sandbox/simulate-webhook", {"type": HUGE}, "type"),
    # a metadata key too long was the error's `param`
    "metadata key": ("/v1/payments", payment_with(metadata={HUGE: "v"}), "metadata"),
    "customer id": ("/v1/payments", payment_with(customer={"id": "cus_" + HUGE}), "customer.id"),
    "customer email": (
        "/v1/payments",
        payment_with(customer={"email": HUGE + "@example.com"}),
        "customer.email",
    ),
    "country": (
        "/v1/payments",
        payment_with(customer={"billing_address": {"country": HUGE}}),
        "customer.billing_address.country",
    ),
    "statement_descriptor": (
        "/v1/payments",
        payment_with(statement_descriptor=HUGE),
        "statement_descriptor",
    ),
    "enabled_events": (
        "/v1/webhook-endpoints",
        {"url": "https://example.com/hooks", "enabled_events": [HUGE]},
        "enabled_events",
    ),
    "simulate endpoint": (
        "/v1/sandbox/simulate-webhook",
        {"type": "payment.captured", "endpoint": "we_" + HUGE},
        "endpoint",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_huge_string_is_refused_with_a_short_answer_and_a_short_stored_one(api, case):
    path, body, param = CASES[case]
    response = api.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY=f"limits-{case}")
    error = error_of(response, 400, "validation_error", "invalid_parameter")
    assert error["param"] == param
    assert len(response.content) < SMALL_ANSWER, error["message"][:200]
    (record,) = IdempotencyRecord.objects.filter(status=400)
    assert len(bytes(record.body)) < SMALL_ANSWER


def test_an_unknown_token_is_quoted_short(api):
    token = "tok_" + "Z" * 60  # within the 64 characters of an id: looked up, not found
    response = api.post("/v1/payments", payment_body(token), format="json")
    error = error_of(response, 400, "validation_error", "token_invalid")
    assert token not in error["message"] and token[:30] in error["message"]


def test_the_resend_endpoint_is_an_id_of_at_most_64_characters(api):
    created(api)
    event = api.get("/v1/events").json()["data"][0]
    body = {"endpoint": "we_" + HUGE}
    response = api.post(f"/v1/events/{event['id']}/resend", body, format="json")
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == "endpoint"
    assert len(response.content) < SMALL_ANSWER


@pytest.mark.parametrize(
    "field, value",
    [("number", "4" * 65), ("name", "n" * 201), ("cvc", "1" * 5000), ("type", HUGE)],
)
def test_tokenizer_strings_are_bounded(api, field, value):
    body = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2099, "cvc": "123"}
    response = api.post("/v1/sandbox/tokens", {**body, field: value}, format="json")
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == field
    assert len(response.content) < SMALL_ANSWER


def test_a_list_filter_quotes_a_bad_value_short(api):
    response = api.get("/v1/payments", {"status": "s" * 5000})
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == "status"
    assert len(response.content) < SMALL_ANSWER


def test_strings_within_their_limits_pass(api):
    token = tokenize(api)
    body = payment_body(
        token,
        description="d" * 500,
        reference="r" * 64,
        metadata={"k" * 40: "v" * 500},
        customer={"name": "n" * 200, "email": "a" * 64 + "@example.com"},
    )
    assert api.post("/v1/payments", body, format="json").status_code == 201


def test_quoted_shows_a_prefix_and_marks_the_cut():
    assert quoted("eur") == "'eur'"
    assert quoted("x" * 41) == "'" + "x" * 40 + "'…"
    assert quoted({"a": "b" * 100}).endswith("…") and len(quoted({"a": "b" * 100})) == 41
    assert quoted(12) == "12"


def test_the_envelope_cuts_a_long_message_and_param():
    error = ValidationFailed("m" * 10_000, param="p" * 10_000).envelope("req_1")["error"]
    assert len(error["message"]) == MAX_MESSAGE_CHARS and error["message"].endswith("…")
    assert len(error["param"]) <= 200


def test_an_error_answer_over_the_stored_limit_is_not_kept(new_merchant, caplog):
    claim = idempotency_claim(
        merchant_id=new_merchant.merchant.id,
        livemode=False,
        key="too-large",
        method="POST",
        path="/v1/test/work",
        body=b"{}",
        request_id="req_first",
    )
    body = json.dumps({"error": {"message": "m" * MAX_STORED_ERROR_BYTES}})
    idempotency_settle(claim, HttpResponse(body, status=400, content_type="application/json"))
    (record,) = IdempotencyRecord.objects.all()
    assert record.status is None and not bytes(record.body)  # released, not stored
    assert "not stored" in caplog.text


@pytest.mark.parametrize("name", ["reference", "starting_after", "type", "anything"])
def test_a_query_value_over_500_characters_is_refused_naming_it(api, name):
    path = "/v1/events" if name == "type" else "/v1/payments"
    response = api.get(path, {name: "r" * 501})
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == name
    assert len(response.content) < SMALL_ANSWER


def test_a_query_value_of_500_characters_is_served(api):
    assert api.get("/v1/payments", {"reference": "r" * 500}).json()["data"] == []
