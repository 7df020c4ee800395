"""The fan-out's endpoint list, cached per process under the configuration revision
(webhooks.selectors.enabled_endpoint_list, infra/revision.py): a payment of a merchant seen
before reads no endpoint, only the revision (after its merchant's lock), every endpoint change
is seen by the next fan-out (a change by hand within MAX_AGE; each write path changes the
revision: tests/infra/test_revision_writers.py), and Redis, up, down or hung, changes none of it.

A test's transaction is never committed; the revision a change sets in it is seen by the test's
own connection as another process sees it after the commit (tests/webhooks/test_fan_out_order.py
runs changes and events on connections of their own).
"""

import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from infra import revision
from tests.conftest import redis_cache_at
from tests.payments.support import payment_body, tokenize
from tests.sick import FORWARD
from tests.webhooks.urls import public_url
from webhooks.attempts import delivery_run
from webhooks.models import Delivery, WebhookEndpoint
from webhooks.selectors import enabled_endpoint_list
from webhooks.services import endpoint_create, endpoint_update
from webhooks.tasks import dispatch_events

pytestmark = pytest.mark.postgres


def add_endpoint(merchant, enabled_events=None) -> WebhookEndpoint:
    return endpoint_create(
        merchant=merchant, livemode=False, url=public_url(), enabled_events=enabled_events
    ).endpoint


def pay(api, token: str | None = None) -> str:
    """A payment over HTTP (`token` made beforehand, to count one request alone); -> its id."""
    body = payment_body(token or tokenize(api))
    response = api.post("/v1/payments", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def fanned_out_to(payment_id: str) -> set[tuple[str, str]]:
    """(event type, endpoint id) of the payment's deliveries."""
    deliveries = Delivery.objects.filter(event__resource_id=payment_id)
    return set(deliveries.values_list("event__type", "endpoint_id"))


def endpoint_reads(queries: CaptureQueriesContext) -> int:
    return sum(WebhookEndpoint._meta.db_table in q["sql"] for q in queries.captured_queries)


def revision_reads(queries: CaptureQueriesContext) -> list[str]:
    """The revision reads: "auth" (authentication's), "fan-out" (after the merchant's lock;
    "fan-out in the create" when the create's statement makes it)."""
    reads = []
    for sql in (q["sql"] for q in queries.captured_queries):
        if sql == revision.SQL:
            reads.append("auth")
        elif sql.startswith("SELECT webhooks_fan_out_revision("):
            reads.append("fan-out")
        elif "webhooks_fan_out_revision(" in sql:
            reads.append("fan-out in the create")
    return reads


def endpoint_reads_of_payments(api, payments: int = 2) -> int:
    """How many of `payments` payments read the endpoint list from the database."""
    tokens = [tokenize(api) for _ in range(payments)]
    with CaptureQueriesContext(connection) as queries:
        for token in tokens:
            pay(api, token)
    return endpoint_reads(queries)


def test_a_second_payment_reads_no_endpoint_and_fans_out_to_every_subscriber(api, merchant):
    everything = add_endpoint(merchant)
    payments = add_endpoint(merchant, ["payment.*"])
    add_endpoint(merchant, ["refund.*"])
    first = pay(api)
    token = tokenize(api)
    with CaptureQueriesContext(connection) as queries:
        second = pay(api, token)
    assert endpoint_reads(queries) == 0
    types = {event_type for event_type, _ in fanned_out_to(first)}
    assert types  # the payment's events
    expected = {(t, e.id) for t in types for e in (everything, payments)}
    assert fanned_out_to(first) == fanned_out_to(second) == expected


def test_a_merchant_without_endpoints_reads_them_once(api):
    assert endpoint_reads_of_payments(api, 3) == 1


def test_an_endpoint_created_is_seen_by_the_next_payment(api):
    pay(api)  # no endpoint: cached
    response = api.post("/v1/webhook-endpoints", {"url": public_url()}, format="json")
    assert response.status_code == 201
    assert {e for _, e in fanned_out_to(pay(api))} == {response.json()["id"]}


def test_an_endpoint_whose_events_change_is_seen_by_the_next_payment(api, merchant):
    endpoint = add_endpoint(merchant)
    assert fanned_out_to(pay(api))
    endpoint_update(endpoint=endpoint, actor="test", enabled_events=["refund.*"])
    assert fanned_out_to(pay(api)) == set()


def test_an_endpoint_changed_by_hand_is_seen_within_max_age(api, merchant, monkeypatch):
    """An UPDATE that does not call `revision.changed()` (a shell, SQL by hand)."""
    endpoint = add_endpoint(merchant)
    assert fanned_out_to(pay(api))
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(enabled_events=["refund.*"])
    assert fanned_out_to(pay(api))  # the revision did not change
    monkeypatch.setattr(revision, "MAX_AGE", -1.0)  # as MAX_AGE seconds later
    assert fanned_out_to(pay(api)) == set()


def test_an_endpoint_deleted_is_seen_by_the_next_payment(api, merchant):
    endpoint = add_endpoint(merchant)
    assert fanned_out_to(pay(api))
    assert api.delete(f"/v1/webhook-endpoints/{endpoint.id}").status_code == 200
    assert fanned_out_to(pay(api)) == set()


def test_an_endpoint_created_while_redis_is_down_gets_every_later_event(
    api, merchant, sick_redis, settings, time_machine, django_capture_on_commit_callbacks
):
    """Issue 21: an endpoint created while Redis was unreachable got no delivery of most events
    written in the next minute (the revision set in Redis was lost; the lists cached under the
    old one were served once Redis answered again)."""
    time_machine.move_to(timezone.now(), tick=False)
    sick_redis.set_mode(FORWARD)
    redis_cache_at(settings, sick_redis.url)
    pay(api)  # no endpoint: cached
    sick_redis.go_down()  # what it was sent while down is lost, not held back
    with django_capture_on_commit_callbacks(execute=True):  # as the commit would
        endpoint = add_endpoint(merchant)
    assert {e for _, e in fanned_out_to(pay(api))} == {endpoint.id}
    sick_redis.set_mode(FORWARD)
    time_machine.shift(datetime.timedelta(seconds=settings.DEPENDENCY_RETRY_SECONDS))
    for _ in range(2):
        assert {e for _, e in fanned_out_to(pay(api))} == {endpoint.id}


def test_a_payment_request_reads_the_revision_twice_and_no_endpoint(api, merchant):
    # Twice, not in two round trips: the fan-out's read is part of the create's statement.
    endpoint = add_endpoint(merchant)
    pay(api)
    token = tokenize(api)
    with CaptureQueriesContext(connection) as queries:
        payment_id = pay(api, token)
    reads = (revision_reads(queries), endpoint_reads(queries))
    assert reads == (["auth", "fan-out in the create"], 0)
    assert {e for _, e in fanned_out_to(payment_id)} == {endpoint.id}


def test_the_sweepers_fan_out_reads_the_revision_each_time(api, merchant, emit_event):
    pay(api)  # cached "no endpoint"
    endpoint = add_endpoint(merchant)
    for _ in range(2):
        event = emit_event()  # left to the sweeper
        with CaptureQueriesContext(connection) as queries:
            dispatch_events.apply(args=[[event.id]])  # as a worker runs it, in this thread
        assert Delivery.objects.get(event=event).endpoint_id == endpoint.id
        assert revision_reads(queries) == ["fan-out"]


def test_without_redis_the_list_is_cached_all_the_same(without_redis, api):
    assert endpoint_reads_of_payments(api) == 1


def test_the_setting_turns_the_cache_off_not_the_merchants_lock(settings, api):
    settings.WEBHOOK_ENDPOINT_CACHE = False
    tokens = [tokenize(api) for _ in range(2)]
    with CaptureQueriesContext(connection) as queries:
        for token in tokens:
            pay(api, token)
    assert endpoint_reads(queries) == 2
    assert revision_reads(queries).count("fan-out in the create") == 2


def test_each_use_gets_instances_of_its_own(merchant):
    add_endpoint(merchant, ["payment.*"])
    (first,) = enabled_endpoint_list(merchant.id, False)
    first.enabled_events.append("refund.*")
    with CaptureQueriesContext(connection) as queries:
        (second,) = enabled_endpoint_list(merchant.id, False)
    assert endpoint_reads(queries) == 0
    assert second is not first and second.enabled_events == ["payment.*"]


def test_a_delivery_to_an_endpoint_deleted_meanwhile_is_canceled_unsent(
    api, receiver, endpoint_for
):
    """A pending delivery whose endpoint is deleted without endpoint_delete's cancel (SQL by
    hand; endpoint_delete waits for the events in flight, then cancels what they wrote): the
    worker's claim reads the endpoint row afresh and cancels the delivery without sending."""
    endpoint, _ = endpoint_for(receiver)
    ids = list(
        Delivery.objects.filter(
            event__resource_id=pay(api), endpoint=endpoint, status="pending"
        ).values_list("pk", flat=True)
    )
    assert ids
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(deleted_at=timezone.now())
    assert [delivery_run(delivery_id) for delivery_id in ids] == [None] * len(ids)
    statuses = Delivery.objects.filter(pk__in=ids).values_list("status", flat=True)
    assert set(statuses) == {Delivery.Status.CANCELED}
    assert receiver.requests == []
