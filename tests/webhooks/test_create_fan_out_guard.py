"""Step 3 of a create as one statement of its own (payments.steps._apply_create's `alone`): no
BEGIN and no COMMIT when the events fan out to nothing, and the transaction as before as soon
as they may fan out to an endpoint (docs/payments.md "Operation runner")."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from events.models import Event
from infra import revision
from tests.payments.support import payment_body, tokenize
from webhooks.models import Delivery
from webhooks.selectors import _endpoint_lists

# Autocommit, as a server runs: the test's own transaction would hide what commits when.
pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def create(api, key: str, body: dict | None = None):
    """A create's answer, and the statements Django logged for it (BEGIN and COMMIT too)."""
    body = body or payment_body(tokenize(api))
    with CaptureQueriesContext(connection) as captured:
        response = api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    return response, [query["sql"] for query in captured.captured_queries]


def transaction_statements(statements: list[str]) -> list[str]:
    return [sql for sql in statements if sql in ("BEGIN", "COMMIT", "ROLLBACK")]


def test_a_create_whose_events_fan_out_to_nothing_is_a_statement_of_its_own(api):
    create(api, "first")  # its fan-out keeps the merchant's (empty) endpoint list
    body = payment_body(tokenize(api))
    response, statements = create(api, "second", body)

    assert response.status_code == 201
    assert transaction_statements(statements) == []
    payment = response.json()
    events = Event.objects.filter(resource_id=payment["id"])
    assert sorted(event.type for event in events) == ["payment.captured", "payment.created"]
    assert [event.data["object"] for event in events] == [payment, payment]
    replay, _ = create(api, "second", body)  # the answer its statement stored
    assert (replay.status_code, replay.json()) == (201, payment)
    assert replay["Idempotent-Replayed"] == "true"


def test_an_endpoint_made_after_the_list_was_kept_gets_the_next_payments_events(
    api, merchant, loopback_allowed
):
    create(api, "before")
    endpoint = api.post("/v1/webhook-endpoints", {"url": "https://127.0.0.1:9/hook"}, format="json")
    kept = _endpoint_lists.latest((merchant.id, False))
    assert kept is not None and kept[1] == ()  # still held, under the revision before

    response, statements = create(api, "after")

    assert response.status_code == 201
    assert transaction_statements(statements) == ["BEGIN", "COMMIT"]  # the guard held it back
    deliveries = Delivery.objects.filter(event__resource_id=response.json()["id"])
    assert sorted(d.event.type for d in deliveries) == ["payment.captured", "payment.created"]
    assert {d.endpoint_id for d in deliveries} == {endpoint.json()["id"]}


def test_without_a_list_held_the_create_is_a_transaction(api, merchant, monkeypatch):
    create(api, "first")
    monkeypatch.setattr(revision, "MAX_AGE", -1.0)  # every entry too old to trust
    assert _endpoint_lists.latest((merchant.id, False)) is None

    response, statements = create(api, "second")

    assert response.status_code == 201
    assert transaction_statements(statements) == ["BEGIN", "COMMIT"]
