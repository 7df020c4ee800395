"""Finding a payment: by id, reference, last4, customer id or email and amount, exact and each
through an index; a created-date filter; no DISTINCT over the payments for the filters."""

import datetime

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api import ids
from api.ids import new_id
from events.models import Event
from payments.models import Payment
from payments.selectors import payment_search
from tests.payments.support import APPROVED, MASTERCARD, created
from tests.refunds.support import captured_payment, refunded
from webhooks.admin import event_search
from webhooks.models import WebhookEndpoint


def found(client, term):
    return client.get("/admin/payments/payment/", {"q": term}).content.decode()


def test_search_by_last4_customer_email_amount_and_exact_reference(staff_client, api):
    customer = new_id("cus")
    visa = created(
        api,
        APPROVED,
        amount=12000,
        reference="order-777",
        customer={"id": customer, "email": "ada@example.test"},
    )
    mastercard = created(api, MASTERCARD, amount=500, reference="order-7")
    for term in ("4242", customer, "ada@example.test", "120.00", "order-777", visa["id"]):
        page = found(staff_client, term)
        assert visa["id"] in page and mastercard["id"] not in page, term
    for term in ("4444", "5.00", "order-7"):
        page = found(staff_client, term)
        assert mastercard["id"] in page and visa["id"] not in page, term


def test_search_by_email_ignores_case(staff_client, api):
    """Issue 24 item 4: the email search was exact and case-sensitive."""
    mixed = created(api, APPROVED, customer={"email": "Grace.Hopper@Example.TEST"})
    other = created(api, APPROVED, customer={"email": "grace@example.test"})
    for term in (
        "grace.hopper@example.test",
        "GRACE.HOPPER@EXAMPLE.TEST",
        " Grace.Hopper@example.test ",
    ):
        page = found(staff_client, term)
        assert mixed["id"] in page and other["id"] not in page, term


def test_created_date_filter(staff_client, api, merchant, monkeypatch):
    with time_machine.travel(datetime.datetime(2026, 1, 5, 12, tzinfo=datetime.UTC)):
        # Made then, id and all: the fixtures' ids, made now, are not "the last one" then.
        monkeypatch.setattr(ids, "_last_ms", -1)
        old = created(api, APPROVED)
    new = created(api, APPROVED)
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    with CaptureQueriesContext(connection) as queries:
        page = staff_client.get(
            "/admin/payments/payment/",
            {"created__gte": f"{today} 00:00:00+00:00", "merchant": merchant.id, "livemode": "0"},
        ).content.decode()
    assert new["id"] in page and old["id"] not in page
    # An id window (ids are made with `created`): the list's index starts at the window.
    listed = [q["sql"] for q in queries.captured_queries if "payments_payment" in q["sql"]]
    assert any('"payments_payment"."id" >=' in sql for sql in listed)


@pytest.mark.parametrize("url", ["/admin/payments/payment/", "/admin/events/event/"])
def test_a_merchants_list_is_one_mode_at_a_time_live_unless_test(staff_client, api, url):
    """Both modes at once walked the primary key (issue 22): the mode is always chosen."""
    payment = created(api, APPROVED)  # the api fixture's key is a test key
    shown = Event.objects.filter(resource_id=payment["id"]).first().id if "event" in url else None
    wanted = shown or payment["id"]
    merchant = Payment.objects.get(pk=payment["id"]).merchant_id
    live = staff_client.get(url, {"merchant": merchant}).content.decode()
    assert wanted not in live and "?livemode=0" in live and "All" not in mode_choices(live)
    test = staff_client.get(url, {"merchant": merchant, "livemode": "0"}).content.decode()
    assert wanted in test
    searched = staff_client.get(url, {"q": merchant})  # its id typed: its list, one mode
    assert searched.status_code == 302 and searched["Location"] == f"{url}?merchant={merchant}"


@pytest.mark.postgres  # PostgreSQL's planner settings and plan text
@pytest.mark.parametrize(
    ("term", "index"),
    [
        ("4242", "payment_card_last4"),
        ("cus_01J0000000000000000000000A", "payment_customer"),
        ("ada@example.test", "payment_customer_email_ci"),
        ("Ada@Example.TEST", "payment_customer_email_ci"),
        ("120.00", "payment_amount"),
        ("order-777", "payment_reference_any"),
    ],
)
def test_each_kind_of_search_reads_its_index(db, term, index):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table must not hide a scan
    plan = Payment.objects.filter(payment_search(term)).explain()
    assert index in plan, plan


@pytest.mark.parametrize(
    ("url", "table", "fixed_choice"),
    [
        ("/admin/payments/payment/", "PAYMENTS_PAYMENT", "?currency=jpy"),
        ("/admin/events/event/", "EVENTS_EVENT", "?type=refund.created"),
        ("/admin/refunds/refund/", "REFUNDS_REFUND", "?currency=jpy"),
        ("/admin/webhooks/delivery/", "WEBHOOKS_DELIVERY", "?status__exact=dead_lettered"),
    ],
)
def test_big_lists_and_their_filters_run_no_distinct_or_full_count(
    staff_client, api, merchant, url, table, fixed_choice
):
    payment = captured_payment(api)
    refunded(api, payment["id"])
    with CaptureQueriesContext(connection) as queries:
        page = staff_client.get(url, {"merchant": merchant.id})
    assert page.status_code == 200 and fixed_choice[1:] in page.content.decode()
    sql = [query["sql"].upper() for query in queries.captured_queries]
    assert not [q for q in sql if "DISTINCT" in q and table in q]
    assert not [q for q in sql if "COUNT(*)" in q and table in q and "LIMIT" not in q]


@pytest.mark.postgres  # PostgreSQL's planner settings and plan text
def test_event_search_by_resource_reads_its_index(staff_client, api):
    one, other = captured_payment(api), captured_payment(api)
    page = staff_client.get("/admin/events/event/", {"q": one["id"]}).content.decode()
    mine = Event.objects.filter(resource_id=one["id"])
    assert mine and all(event.id in page for event in mine)
    assert not any(e.id in page for e in Event.objects.filter(resource_id=other["id"]))
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    assert "event_resource_id" in Event.objects.filter(event_search(one["id"])).explain()


BIG_LISTS = [
    ("/admin/payments/payment/", "currency=jpy", {"currency": "jpy"}),
    ("/admin/payments/payment/", "status__exact=captured", {"status__exact": "captured"}),
    ("/admin/events/event/", "type=refund.created", {"type": "refund.created"}),
    ("/admin/refunds/refund/", "currency=jpy", {"currency": "jpy"}),
    ("/admin/webhooks/delivery/", "status__exact=dead_lettered", {"status": "dead_lettered"}),
    ("/admin/webhooks/deadletter/", "created__gte", {"created__gte": "2026-01-01 00:00:00+00:00"}),
]


@pytest.mark.parametrize(("url", "offered", "typed"), BIG_LISTS)
def test_a_big_list_offers_its_filters_once_a_merchant_is_chosen(
    staff_client, merchant, url, offered, typed
):
    """No filter reads every merchant's rows (issue 20 item 10): the value filters narrow one
    merchant's list, through the indexes that lead with the merchant."""
    first = staff_client.get(url).content.decode()
    assert merchant.id in first and offered not in first  # the merchant filter only
    assert offered in staff_client.get(url, {"merchant": merchant.id}).content.decode()
    assert staff_client.get(url, typed).status_code == 400  # typed without a merchant
    assert staff_client.get(url, {**typed, "merchant": merchant.id}).status_code == 200


def mode_choices(page: str) -> str:
    """The text of the mode filter's block on a changelist."""
    start = page.index("By mode")
    return page[start : page.index("</ul>", start)]


def test_an_endpoint_scopes_the_delivery_filters_too(staff_client, merchant):
    endpoint = WebhookEndpoint.objects.create(
        merchant=merchant,
        livemode=False,
        url="https://example.test/hook",
        enabled_events=["*"],
        secret_encrypted="-",
        secret_last4="abcd",
    )
    page = staff_client.get("/admin/webhooks/delivery/", {"endpoint": endpoint.id})
    assert "status__exact=dead_lettered" in page.content.decode()
