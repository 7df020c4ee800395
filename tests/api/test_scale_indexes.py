"""Each query bench_scale found reading rows it did not need (issue 22, docs/data.md "Which
index each query reads") reads its own index. Plans are asked with sequential scans
discouraged, as on a big table: on these tiny tables PostgreSQL would rightly read the heap;
what is checked is that the index the query needs exists and serves its conditions."""

import datetime

import pytest
from django.db import connection
from django.utils import timezone

from api.ids import created_window
from api.models import RequestLogEntry
from events.models import Event
from payments.erasure import payments_of_customer
from refunds.models import Refund
from webhooks.admin import delivery_search
from webhooks.models import Attempt, Delivery
from webhooks.selectors import dead_letters

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def indexes_read(queryset) -> set[str]:
    """The index names in the plan of `queryset`, sequential scans made costly."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        try:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
            [[[plan]]] = cursor.fetchall()
        finally:
            cursor.execute("RESET enable_seqscan")
    return set(index_names(plan["Plan"]))


def index_names(node: dict):
    if "Index Name" in node:
        yield node["Index Name"]
    for child in node.get("Plans", []):
        yield from index_names(child)


def test_dead_letters_read_their_partial_index():
    listed = dead_letters().order_by("-event_id", "-endpoint_id")[:100]
    assert "delivery_dead_letter" in indexes_read(listed)
    assert "delivery_dead_letter" in indexes_read(dead_letters())


def test_an_endpoints_latest_attempts_read_attempt_endpoint_recent():
    recent = Attempt.objects.filter(endpoint_id="whe_x").order_by("-attempted_at")[:100]
    assert "attempt_endpoint_recent" in indexes_read(recent)


def test_a_merchants_dead_lettered_events_read_event_dead_lettered():
    events = Event.objects.filter(merchant_id="mch_x", dead_lettered_at__isnull=False)
    assert "event_dead_lettered" in indexes_read(events.order_by("-pk")[:100])


@pytest.mark.parametrize(
    "condition, index",
    [
        ({}, "refund_merchant"),
        ({"status": "failed"}, "refund_merchant_status"),
        ({"currency": "kwd"}, "refund_merchant_currency"),
    ],
)
def test_a_merchants_refunds_read_the_index_of_their_filter(condition, index):
    refunds = Refund.objects.filter(merchant_id="mch_x", **condition).order_by("-pk")[:100]
    assert index in indexes_read(refunds)


def test_failed_requests_read_requestlog_errors():
    entries = RequestLogEntry.objects.filter(
        merchant_id="mch_x", livemode=True, status__gte=400, status__lt=500
    )
    assert "requestlog_errors" in indexes_read(entries.order_by("-pk")[:26])


def test_the_replays_of_a_held_request_id_read_requestlog_replay_of():
    # `request_id=` is id = X OR replay_of = X: the primary key serves one arm, this the other.
    held = "req_01J00000000000000000000000"
    replays = RequestLogEntry.objects.filter(replay_of=held, merchant_id="mch_x", livemode=True)
    assert "requestlog_replay_of" in indexes_read(replays)


def test_a_request_log_window_is_an_id_range():
    start = timezone.now() - datetime.timedelta(days=20)
    window = created_window("req", start, start + datetime.timedelta(days=1))
    entries = RequestLogEntry.objects.filter(window, merchant_id="mch_x", livemode=True)
    sql, _ = entries.query.sql_with_params()
    assert '"api_requestlogentry"."id" >=' in sql and '"api_requestlogentry"."id" <' in sql


def test_a_deliveries_search_by_resource_reads_event_resource_id_not_every_event():
    searched = Delivery.objects.filter(delivery_search("pay_01KAXEXG040000000000001AZ0"))
    assert "event_resource_id" in indexes_read(searched)


def test_erasure_finds_an_email_through_payment_customer_email_ci():
    payments = payments_of_customer(merchant_id="mch_x", email="Ann@Example.test")
    assert "payment_customer_email_ci" in indexes_read(payments)


def test_an_endpoints_deliveries_of_a_status_read_delivery_endpoint_status():
    """The deliveries admin's status filter, scoped to a merchant's endpoints (a few ids)."""
    deliveries = Delivery.objects.filter(endpoint_id__in=["whe_x"], status="delivered")
    assert "delivery_endpoint_status" in indexes_read(deliveries.order_by("-pk")[:100])
    newest = Delivery.objects.filter(endpoint_id__in=["whe_x"]).order_by("-pk")[:100]
    assert "delivery_endpoint_list" in indexes_read(newest)


def test_the_endpoint_keys_own_indexes_are_dropped_their_wider_twins_serve():
    """db_index=False on the endpoint keys (webhooks 0010): each index leading with the
    endpoint is one a query reads."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename IN "
            "('webhooks_delivery', 'webhooks_attempt') AND indexdef LIKE '%%(endpoint_id%%'"
        )
        names = {name for (name,) in cursor.fetchall()}
    assert names == {
        "delivery_endpoint_list",
        "delivery_endpoint_status",
        "delivery_in_flight",
        "delivery_nudged",
        "delivery_recoverable",
        "delivery_blocked",  # read by the beat's release of blocked deliveries
        "attempt_endpoint_recent",
    }
    for_key_check = Attempt.objects.filter(endpoint_id="whe_x")
    assert "attempt_endpoint_recent" in indexes_read(for_key_check)
