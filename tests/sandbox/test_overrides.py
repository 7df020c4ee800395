"""The `_svc_test_*` metadata overrides of the simulator."""

import time

import pytest

from payments.declines import DECLINES
from payments.models import Payment, Token
from tests.payments.support import (
    APPROVED,
    INSUFFICIENT_FUNDS,
    create,
    created,
    error_of,
    payment_body,
    payment_id_in,
    tokenize,
)


@pytest.mark.parametrize("code", sorted(DECLINES))
def test_outcome_declined_with_every_code(api, code):
    response = create(api, APPROVED, metadata={"_svc_test_outcome": f"declined:{code}"})
    error = error_of(response, 402, "card_error", "card_declined")
    assert error["decline_code"] == code
    payment = Payment.objects.get(pk=payment_id_in(error))
    assert payment.outcome["decline_is_soft"] is DECLINES[code].soft
    assert payment.outcome["response_code"] == DECLINES[code].response_code


def test_outcome_approved_overrides_a_declining_card(api):
    assert (
        created(api, INSUFFICIENT_FUNDS, metadata={"_svc_test_outcome": "approved"})["status"]
        == "captured"
    )


def test_outcome_failed(api):
    error_of(
        create(api, APPROVED, metadata={"_svc_test_outcome": "failed"}),
        422,
        "processing_error",
        "payment_failed",
    )


def test_outcome_requires_action(api):
    payment = created(api, APPROVED, metadata={"_svc_test_outcome": "requires_action"})
    assert payment["status"] == "requires_action" and payment["next_action"]["type"] == "redirect"


def test_latency_really_delays(api):
    started = time.monotonic()
    created(api, APPROVED, metadata={"_svc_test_latency_ms": 60})
    assert time.monotonic() - started >= 0.06


@pytest.mark.parametrize(
    "status, type_, code",
    [
        (500, "api_error", "connector_http_error"),
        (503, "api_error", "connector_http_error"),
        (429, "rate_limit_error", "rate_limit_exceeded"),
        (402, "card_error", "card_declined"),
        (400, "validation_error", "invalid_parameter"),
    ],
)
def test_http_error_answers_that_status_and_processes_nothing(api, status, type_, code):
    token = tokenize(api)
    body = payment_body(token, metadata={"_svc_test_http_error": status})
    response = api.post("/v1/payments", body, format="json")
    error_of(response, status, type_, code)
    assert not Payment.objects.exists()
    assert Token.objects.get(pk=token).used_at is None  # a retry can use it


def test_rate_limit_simulation_says_when_to_retry(api):
    response = create(api, APPROVED, metadata={"_svc_test_http_error": 429})
    assert response["Retry-After"] == "1"


@pytest.mark.parametrize(
    "key, value",
    [
        ("_svc_test_outcome", "declined:nope"),
        ("_svc_test_outcome", "processing"),
        ("_svc_test_latency_ms", -1),
        ("_svc_test_latency_ms", 10_001),
        ("_svc_test_latency_ms", "50"),
        ("_svc_test_http_error", 418),
        ("_svc_test_http_error", True),
    ],
)
def test_malformed_overrides_are_400_naming_the_key(api, key, value):
    response = create(api, APPROVED, metadata={key: value})
    assert (
        error_of(response, 400, "validation_error", "invalid_parameter")["param"]
        == f"metadata.{key}"
    )
    assert not Payment.objects.exists()


def test_live_payments_never_read_overrides(live_api):
    body = payment_body(metadata={"_svc_test_outcome": "approved"})
    error_of(
        live_api.post("/v1/payments", body, format="json"), 422, "processing_error", "no_route"
    )
