"""Simulated latency (`_svc_test_latency_ms`) holds no database connection, transaction or
lock while it waits, and a merchant's simulated waits are capped, so test-mode slowness cannot
hold up live requests (docs/payments.md "Simulated latency"). Proven structurally: what is
held is looked at during the wait, and the cap refuses the wait one over it."""

import pytest
from django.db import connection

from payments.models import Payment, Token
from sandbox import latency
from tests.payments.support import APPROVED, payment_body, tokenize

pytestmark = pytest.mark.django_db(transaction=True)

SLOW = {"_svc_test_latency_ms": 50}


@pytest.fixture
def during_the_wait(monkeypatch):
    """Functions to run while a simulated wait is in flight (instead of sleeping)."""
    actions = []

    def wait(seconds):
        for action in actions:
            action()

    monkeypatch.setattr(latency, "sleep", wait)
    return actions


# PostgreSQL: the test database on SQLite is in memory, whose one connection Django never
# closes (a file database, as the embedded defaults use, is closed like any other).
@pytest.mark.postgres
def test_the_wait_holds_no_connection_and_the_cap_refuses_one_more(
    api, live_api, other_api, settings, during_the_wait
):
    settings.SANDBOX_LATENCY_CONCURRENCY = 1
    seen = {}
    second_token = tokenize(api)

    def look():
        seen["connection"] = connection.connection
        seen["in_transaction"] = connection.in_atomic_block
        seen["live"] = live_api.get("/v1/payments")
        seen["second"] = api.post(
            "/v1/payments", payment_body(second_token, metadata=SLOW), format="json"
        )
        seen["other_merchant"] = other_api.post(
            "/v1/payments", payment_body(tokenize(other_api), metadata=SLOW), format="json"
        )

    during_the_wait.append(look)
    first = api.post("/v1/payments", payment_body(tokenize(api), metadata=SLOW), format="json")

    assert first.status_code == 201, first.content
    assert seen["connection"] is None and not seen["in_transaction"]
    assert seen["live"].status_code == 200
    refused = seen["second"]
    assert refused.status_code == 429 and refused["Retry-After"] == "1"
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert Token.objects.get(pk=second_token).used_at is None  # nothing was processed
    assert seen["other_merchant"].status_code == 201  # the cap is per merchant


def test_a_slot_is_given_back_after_the_wait(api, settings, during_the_wait):
    settings.SANDBOX_LATENCY_CONCURRENCY = 1
    for _ in range(3):
        body = payment_body(tokenize(api, APPROVED), metadata=SLOW)
        assert api.post("/v1/payments", body, format="json").status_code == 201
    assert Payment.objects.count() == 3
