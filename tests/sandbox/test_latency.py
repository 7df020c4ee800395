"""Simulated latency (`_svc_test_latency_ms`) holds no transaction or lock while it waits
(nor, with DATABASE_POOL, a pooled connection: a connection its thread keeps is its own), and
a merchant's simulated waits are capped, so test-mode slowness cannot hold up live requests
(docs/payments.md "Simulated latency"). Proven structurally: what is held is looked at during
the wait, and the cap refuses the wait one over it."""

import psycopg
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
def test_the_wait_holds_no_transaction_and_the_cap_refuses_one_more(
    api, live_api, other_api, settings, during_the_wait
):
    settings.SANDBOX_LATENCY_CONCURRENCY = 1
    seen = {}
    second_token = tokenize(api)

    def look():
        held = connection.connection
        seen["pooled"] = held is not None and connection.pool is not None
        seen["idle"] = (
            held is None or held.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        )
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
    assert not seen["pooled"] and seen["idle"] and not seen["in_transaction"]
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


def test_a_wait_holds_more_of_the_test_mode_budget(api, live_api, settings, during_the_wait):
    """A simulated wait costs its request's unit plus SANDBOX_LATENCY_COST: with a budget of
    3 and a cost of 2, nothing else of the merchant's test mode runs meanwhile; live does."""
    settings.API_CONCURRENCY_LIMITS = {"test": 3, "live": 3}
    settings.SANDBOX_LATENCY_COST = 2
    seen = {}

    def look():
        seen["test"] = api.get("/v1/payments")
        seen["live"] = live_api.get("/v1/payments")

    during_the_wait.append(look)
    first = api.post("/v1/payments", payment_body(tokenize(api), metadata=SLOW), format="json")
    assert first.status_code == 201, first.content
    assert seen["test"].status_code == 429
    assert seen["test"].json()["error"]["code"] == "rate_limit_exceeded"
    assert seen["live"].status_code == 200
    assert api.get("/v1/payments").status_code == 200  # given back after the wait


def test_a_wait_over_the_budget_is_refused_before_it_waits(api, settings, during_the_wait):
    settings.API_CONCURRENCY_LIMITS = {"test": 2, "live": 2}
    settings.SANDBOX_LATENCY_COST = 2
    during_the_wait.append(lambda: pytest.fail("waited"))
    token = tokenize(api)
    refused = api.post("/v1/payments", payment_body(token, metadata=SLOW), format="json")
    assert refused.status_code == 429, refused.content
    assert "budget" in refused.json()["error"]["message"]
    assert Token.objects.get(pk=token).used_at is None
