"""What support reads: formatted amounts, a card line, times to the second in UTC, the payment's
timeline with its refunds' events and their deliveries, and the deliveries list."""

import re

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from api.currencies import format_amount
from backoffice import toolkit
from events.models import Event
from payments.admin import fees_line
from payments.models import Payment
from tests.factories import PaymentFactory
from tests.payments.support import APPROVED, created
from tests.refunds.support import captured_payment, refunded
from webhooks.attempts import delivery_run
from webhooks.fanout import events_fan_out
from webhooks.models import Delivery

TO_THE_SECOND_UTC = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


@pytest.mark.parametrize(
    ("minor", "currency", "shown"),
    [(12000, "eur", "120.00 EUR"), (500, "jpy", "500 JPY"), (1234, "kwd", "1.234 KWD")],
)
def test_amounts_are_formatted_with_the_currency_exponent(minor, currency, shown):
    assert format_amount(minor, currency) == shown


def test_fees_read_in_major_units_with_their_breakdown():
    fees = {"amount": 290, "currency": "eur", "breakdown": {"mdr": 200, "fixed": 90}}
    assert fees_line(fees) == "2.90 EUR (mdr 2.00 EUR, fixed 0.90 EUR)"
    assert fees_line(None) == "—"


def test_the_title_says_what_was_captured(staff_client, api):
    """Issue 24 item 4: a partial capture was titled "captured 4000 eur"."""
    payment = created(api, APPROVED, capture_method="manual", amount=4000, currency="eur")
    api.post(f"/v1/payments/{payment['id']}/captures", {"amount": 2000}, format="json")
    html = staff_client.get(f"/admin/payments/payment/{payment['id']}/change/").content.decode()
    assert f"{payment['id']} captured 20.00 EUR of 40.00 EUR" in html
    full = captured_payment(api, amount=12000)
    html = staff_client.get(f"/admin/payments/payment/{full['id']}/change/").content.decode()
    assert f"{full['id']} captured 120.00 EUR" in html


def test_the_payment_page_reads_as_a_person_would(staff_client, api):
    payment = captured_payment(api, amount=12000)
    listing = staff_client.get("/admin/payments/payment/").content.decode()
    assert "120.00 EUR" in listing and TO_THE_SECOND_UTC.search(listing)
    html = staff_client.get(f"/admin/payments/payment/{payment['id']}/change/").content.decode()
    assert "120.00 EUR" in html
    assert "visa •••• 4242 12/99, EE credit" in html
    assert "<table><tr><th>" in html  # the outcome as a small table
    fees = Payment.objects.get(id=payment["id"]).fees
    assert fees is not None and f"{fees_line(fees)}<" in html  # snapshotted at capture
    assert "Due at" not in html and "due_at" not in html
    assert TO_THE_SECOND_UTC.search(html)


def test_the_timeline_has_the_refunds_events_and_their_deliveries(
    staff_client, agent, api, receiver, endpoint_for, merchant
):
    endpoint, _ = endpoint_for(receiver)
    receiver.reply.body = b"thanks, got it"
    payment = captured_payment(api)
    refund = refunded(api, payment["id"], amount=100)
    for delivery in Delivery.objects.filter(endpoint=endpoint):
        delivery_run(delivery.id)
    html = staff_client.get(f"/admin/payments/payment/{payment['id']}/change/").content.decode()
    timeline = html[html.index('id="timeline"') :]
    created_event = Event.objects.get(type="refund.created", resource_id=refund["id"])
    captured_event = Event.objects.get(type="payment.captured", resource_id=payment["id"])
    assert timeline.index(captured_event.id) < timeline.index(created_event.id)
    assert f'href="/admin/events/event/{quote(created_event.id)}/change/"' in timeline
    assert endpoint.id in timeline and "<strong>delivered</strong>" in timeline
    assert "last HTTP 200" in timeline and "thanks, got it" in timeline
    assert f"/admin/events/event/{quote(created_event.id)}/resend/" in timeline
    read_only = agent("Read-only").get(f"/admin/payments/payment/{payment['id']}/change/")
    assert "/resend/" not in read_only.content.decode()


def test_resend_from_the_event_page_is_confirmed_and_logged(
    staff_client, receiver, endpoint_for, emit_event
):
    endpoint_for(receiver)
    event = emit_event()
    (delivery_id,) = events_fan_out([event.id])
    delivery_run(delivery_id)
    url = f"/admin/events/event/{event.id}/resend/"
    assert "Yes, resend" in staff_client.get(url).content.decode()
    assert staff_client.post(url).status_code == 302
    assert delivery_run(delivery_id).attempt == 2


def test_deliveries_list_with_last_error_resource_and_filters(
    staff_client, receiver, endpoint_for, emit_event, other_merchant
):
    endpoint, _ = endpoint_for(receiver)
    receiver.reply.status, receiver.reply.body = 500, b"boom"
    failing = emit_event()
    (failing_id,) = events_fan_out([failing.id])
    delivery_run(failing_id)
    receiver.reply.status = 200
    fine = emit_event()
    (fine_id,) = events_fan_out([fine.id])
    delivery_run(fine_id)
    Delivery.objects.filter(pk=failing_id).update(status="dead_lettered", next_attempt_at=None)
    listing = staff_client.get("/admin/webhooks/delivery/").content.decode()
    assert failing_id in listing and fine_id in listing
    assert failing.resource_id in listing and "500" in listing
    dead = staff_client.get(
        "/admin/webhooks/delivery/", {"status": "dead_lettered", "endpoint": endpoint.id}
    ).content
    assert failing_id in dead.decode() and fine_id not in dead.decode()
    today = timezone.now().date().isoformat()
    for filters in (
        {"endpoint": endpoint.id},
        {"merchant": endpoint.merchant_id, "livemode": "0"},  # the endpoint's mode
        {
            "created__gte": f"{today} 00:00:00+00:00",
            "merchant": endpoint.merchant_id,
            "livemode": "0",
        },
    ):
        found = staff_client.get("/admin/webhooks/delivery/", filters).content.decode()
        assert failing_id in found and fine_id in found, filters
    # A merchant's deliveries are one mode at a time, live unless test is chosen.
    live = staff_client.get("/admin/webhooks/delivery/", {"merchant": endpoint.merchant_id})
    assert failing_id not in live.content.decode()
    none = staff_client.get("/admin/webhooks/delivery/", {"merchant": other_merchant.id})
    assert failing_id not in none.content.decode()
    # An endpoint of another merchant than the one chosen: nothing, as both filters say.
    mismatched = {"merchant": other_merchant.id, "endpoint": endpoint.id}
    assert (
        failing_id not in staff_client.get("/admin/webhooks/delivery/", mismatched).content.decode()
    )
    letters = staff_client.get("/admin/webhooks/deadletter/").content.decode()
    assert failing_id in letters and fine_id not in letters and "500" in letters
    health = staff_client.get(f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/")
    # The endpoint's health counters (webhooks/health.py), as the API shows them.
    assert re.search(
        r"last hour: 1/2 delivered; last day: 1/2 delivered<br>0 failures in a row<br>"
        r"last success: [\d-]+ [\d:]+ UTC; last failure: [\d-]+ [\d:]+ UTC HTTP 500",
        health.content.decode(),
    )


def test_the_event_page_reads_attempts_without_a_query_each(
    staff_client, receiver, endpoint_for, emit_event, django_assert_max_num_queries
):
    for _ in range(3):
        endpoint_for(receiver)
    event = emit_event()
    for delivery_id in events_fan_out([event.id]):
        delivery_run(delivery_id)
    with django_assert_max_num_queries(7):  # 10 when each attempt's endpoint was a query
        page = staff_client.get(f"/admin/events/event/{event.id}/change/")
    assert page.status_code == 200 and TO_THE_SECOND_UTC.search(page.content.decode())


@pytest.mark.django_db
def test_a_big_list_counts_its_rows_up_to_the_cap(monkeypatch):
    """The capped count reads at most COUNT_CAP + 1 rows (the count of a LIMIT subquery), so a
    list of millions never counts them all; past the cap, narrow with search or filters."""
    monkeypatch.setattr(toolkit, "COUNT_CAP", 2)
    PaymentFactory.create_batch(4)
    with CaptureQueriesContext(connection) as queries:
        assert toolkit.CappedPaginator(Payment.objects.order_by("-pk"), 100).count == 3
    (count,) = queries.captured_queries
    assert "LIMIT 3" in count["sql"] and "ORDER BY" not in count["sql"]
