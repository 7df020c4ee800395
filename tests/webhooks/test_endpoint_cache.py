"""The fan-out's endpoint list, cached per process under the configuration revision
(webhooks.selectors.enabled_endpoint_list, api/revision.py): a payment of a merchant seen
before reads no endpoint and one revision per request, every committed endpoint change is seen
by the next request, outside a request the revision is read afresh, and without Redis nothing
is cached.

A test's changes are never committed, so a change "commits" inside
django_capture_on_commit_callbacks(execute=True): that runs the revision bump as the commit
would. Without it, the change is as one whose commit lands after the payment read the revision.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api import revision
from tests.payments.support import payment_body, tokenize
from webhooks.attempts import delivery_run
from webhooks.models import Delivery, WebhookEndpoint
from webhooks.selectors import enabled_endpoint_list
from webhooks.services import endpoint_create, endpoint_delete, endpoint_roll_secret
from webhooks.tasks import dispatch_events

URL = "https://93.184.215.14/hooks"  # a public address: no DNS, and nothing is sent to it


def add_endpoint(merchant, enabled_events=None) -> WebhookEndpoint:
    return endpoint_create(
        merchant=merchant, livemode=False, url=URL, enabled_events=enabled_events
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


def endpoint_reads_of_payments(api, payments: int = 2) -> int:
    """How many of `payments` payments read the endpoint list from the database."""
    tokens = [tokenize(api) for _ in range(payments)]
    with CaptureQueriesContext(connection) as queries:
        for token in tokens:
            pay(api, token)
    return endpoint_reads(queries)


def test_a_second_payment_reads_no_endpoint_and_fans_out_to_every_subscriber(redis, api, merchant):
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


def test_a_merchant_without_endpoints_reads_them_once(redis, api):
    assert endpoint_reads_of_payments(api, 3) == 1


def test_an_endpoint_created_is_seen_by_the_next_payment(
    redis, api, django_capture_on_commit_callbacks
):
    pay(api)  # no endpoint: cached
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/v1/webhook-endpoints", {"url": URL}, format="json")
    assert response.status_code == 201
    assert {e for _, e in fanned_out_to(pay(api))} == {response.json()["id"]}


def test_an_endpoint_whose_events_change_is_seen_by_the_next_payment(
    redis, api, merchant, django_capture_on_commit_callbacks
):
    endpoint = add_endpoint(merchant)
    assert fanned_out_to(pay(api))
    endpoint.enabled_events = ["refund.*"]
    endpoint.save()  # no bump committed: the payment acts on the list as it read it
    assert fanned_out_to(pay(api))
    with django_capture_on_commit_callbacks(execute=True):
        endpoint.save()
    assert fanned_out_to(pay(api)) == set()


def test_an_endpoint_deleted_is_seen_by_the_next_payment(
    redis, api, merchant, django_capture_on_commit_callbacks
):
    endpoint = add_endpoint(merchant)
    assert fanned_out_to(pay(api))
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"/v1/webhook-endpoints/{endpoint.id}").status_code == 200
    assert fanned_out_to(pay(api)) == set()


@pytest.mark.parametrize(
    "change",
    [
        lambda endpoint: add_endpoint(endpoint.merchant),
        lambda endpoint: endpoint.save(update_fields=["url", "description", "enabled_events"]),
        lambda endpoint: endpoint_roll_secret(endpoint=endpoint),
        lambda endpoint: endpoint_delete(endpoint=endpoint),
        lambda endpoint: endpoint.delete(),
    ],
    ids=["create", "update", "roll-secret", "delete", "delete-row"],
)
def test_every_endpoint_change_bumps_the_revision_when_it_commits(
    redis, merchant, change, django_capture_on_commit_callbacks
):
    endpoint = add_endpoint(merchant)
    before = revision.current()
    with django_capture_on_commit_callbacks() as callbacks:
        change(endpoint)
    assert revision.current() == before  # not committed yet: other processes keep their lists
    for callback in callbacks:
        callback()
    assert revision.current() != before


def test_a_payment_request_reads_the_revision_once(revision_reads, api, merchant):
    endpoint = add_endpoint(merchant)
    pay(api)
    token = tokenize(api)
    revision_reads.clear()
    payment_id = pay(api, token)  # authentication reads it; the fan-out reuses it
    assert len(revision_reads) == 1
    assert {e for _, e in fanned_out_to(payment_id)} == {endpoint.id}


def test_outside_a_request_each_fan_out_reads_the_revision_afresh(
    revision_reads, api, merchant, emit_event, django_capture_on_commit_callbacks
):
    pay(api)  # a request on this thread read the revision and cached "no endpoint"
    with django_capture_on_commit_callbacks(execute=True):
        endpoint = add_endpoint(merchant)
    revision_reads.clear()
    for _ in range(2):
        event = emit_event()  # left to the sweeper
        dispatch_events.apply(args=[[event.id]])  # as a worker runs it, in this thread
        assert Delivery.objects.get(event=event).endpoint_id == endpoint.id
    assert len(revision_reads) == 2


def test_without_redis_every_payment_reads_the_endpoints(without_redis, api):
    assert endpoint_reads_of_payments(api) == 2


def test_the_setting_turns_the_cache_off(redis, settings, api):
    settings.WEBHOOK_ENDPOINT_CACHE = False
    assert endpoint_reads_of_payments(api) == 2


def test_each_use_gets_instances_of_its_own(redis, merchant):
    add_endpoint(merchant, ["payment.*"])
    (first,) = enabled_endpoint_list(merchant.id, False)
    first.enabled_events.append("refund.*")
    with CaptureQueriesContext(connection) as queries:
        (second,) = enabled_endpoint_list(merchant.id, False)
    assert queries.captured_queries == []
    assert second is not first and second.enabled_events == ["payment.*"]


def test_a_delivery_to_an_endpoint_deleted_meanwhile_is_canceled_unsent(
    redis, api, receiver, endpoint_for
):
    """A payment that read the revision before a delete committed fans out to the deleted
    endpoint (as one whose endpoint SELECT ran just before the delete did, uncached); the
    worker's claim reads the endpoint row afresh and cancels the delivery without sending."""
    endpoint, _ = endpoint_for(receiver)
    pay(api)
    endpoint_delete(endpoint=endpoint)  # its bump not landed yet
    ids = list(
        Delivery.objects.filter(
            event__resource_id=pay(api), endpoint=endpoint, status="pending"
        ).values_list("pk", flat=True)
    )
    assert ids
    assert [delivery_run(delivery_id) for delivery_id in ids] == [None] * len(ids)
    statuses = Delivery.objects.filter(pk__in=ids).values_list("status", flat=True)
    assert set(statuses) == {Delivery.Status.CANCELED}
    assert receiver.requests == []
