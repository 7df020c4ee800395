"""Issue 38 item 3: amounts shown and typed in the currency's major units (too many decimals
refused with a clear message), a card cell in the payments list, no Python `None`/`True`/
`False` on a page, one time format on every page of ours, merchants of the same name told
apart, and the request log's section named after the place (docs/back-office.md "Reading")."""

import re

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote

from accounts.services import merchant_create
from api.currencies import AmountNotReadable, parse_amount
from api.models import RequestLogEntry
from payments.admin import shown_value
from payments.models import Payment
from refunds.models import Refund
from tests.payments.support import APPROVED, GENERIC_DECLINE, create, created
from tests.refunds.support import captured_payment, refunded
from webhooks.attempts import delivery_run
from webhooks.models import Delivery

# The apps whose pages are ours (Django's auth and the login throttle's are not).
OUR_APPS = {"accounts", "api", "events", "webhooks", "payments", "refunds", "processors"}
PYTHON_VALUE = re.compile(r">\s*(None|True|False)\s*<")
ONE_TIME_FORMAT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
# Once every time in that format is taken out, anything left that looks like a time is in
# another shape: ISO's T, a clock without seconds or with microseconds, Django's "Nov. 23".
OTHER_TIME = re.compile(
    r"\d:\d\d|\d{4}-\d\d-\d\dT|\b(?:a\.m\.|p\.m\.)|"
    r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\w*\.? \d{1,2}, "
)


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    html = response.content.decode()
    return html[html.index('<div id="content"') :]  # the page's own part, not the chrome


def without_json(html: str) -> str:
    """A page less its raw JSON (an event's body, its previous attributes, metadata): times
    there are the API's own, shown as they were sent."""
    html = re.sub(r"<(code|pre)[^>]*>.*?</\1>", "", html, flags=re.S)
    return re.sub(r'<div class="readonly">\s*[\[{].*?</div>', "", html, flags=re.S)


@pytest.mark.parametrize(
    ("typed", "currency", "minor"),
    [("5.99", "eur", 599), ("120", "eur", 12000), ("0.5", "eur", 50), ("500", "jpy", 500)]
    + [("1.234", "kwd", 1234), (" 7.10 ", "usd", 710)],
)
def test_typed_amounts_are_major_units_of_the_currency(typed, currency, minor):
    assert parse_amount(typed, currency) == minor


@pytest.mark.parametrize(
    ("typed", "currency", "says"),
    [
        ("5.999", "eur", "EUR amounts have at most 2 decimals: 5.999 has more."),
        ("500.5", "jpy", "JPY amounts have no decimals: 500.5 has more."),
        ("1.2345", "kwd", "KWD amounts have at most 3 decimals"),
        ("5,99", "eur", "with digits and a point for decimals, like 12345.67"),
        ("-1", "eur", "no sign"),
        ("1e3", "eur", "with digits"),
        ("1.2.3", "eur", "with digits"),
    ],
)
def test_an_unreadable_amount_says_why(typed, currency, says):
    with pytest.raises(AmountNotReadable, match=re.escape(says)):
        parse_amount(typed, currency)


def test_the_refund_form_takes_major_units_and_refuses_too_many_decimals(staff_client, api):
    payment = captured_payment(api, amount=12000)
    url = f"/admin/payments/payment/{payment['id']}/refund/"
    asked = page(staff_client, url)
    assert "Amount (EUR)" in asked and "In EUR, a point for decimals (2 at most)" in asked
    refused = staff_client.post(url, {"amount": "5.999"})
    assert refused.status_code == 200
    assert "EUR amounts have at most 2 decimals: 5.999 has more." in refused.content.decode()
    assert staff_client.post(url, {"amount": "0.00"}).status_code == 200  # more than zero
    assert not Refund.objects.exists()
    assert staff_client.post(url, {"amount": "5.99", "reason": "damaged"}).status_code == 302
    assert Refund.objects.get().amount == 599


def test_a_capture_of_a_zero_decimal_currency_is_typed_whole(staff_client, api):
    payment = created(api, APPROVED, capture_method="manual", currency="jpy", amount=5000)
    url = f"/admin/payments/payment/{payment['id']}/capture/"
    assert (
        "JPY amounts have no decimals"
        in staff_client.post(url, {"amount": "20.5"}).content.decode()
    )
    assert staff_client.post(url, {"amount": "2000"}).status_code == 302
    assert Payment.objects.get(pk=payment["id"]).amount_captured == 2000


def test_refunds_read_in_major_units_inline_in_their_list_and_on_their_page(staff_client, api):
    payment = captured_payment(api, amount=12000)
    refund = refunded(api, payment["id"], amount=599)
    inline = page(staff_client, f"/admin/payments/payment/{payment['id']}/change/")
    inline = inline[inline.index('id="refunds-group"') :]
    assert "5.99 EUR" in inline and ">599<" not in inline and ">eur<" not in inline
    listing = page(staff_client, "/admin/refunds/refund/")
    assert "5.99 EUR" in listing
    own = page(staff_client, f"/admin/refunds/refund/{refund['id']}/change/")
    assert "5.99 EUR" in own and ">599<" not in own and "due at" not in own.lower()


def test_the_payments_list_shows_the_card_a_last4_search_matched(staff_client, api):
    payment = captured_payment(api)
    found = page(staff_client, "/admin/payments/payment/?q=4242")
    assert payment["id"] in found and "card<br><small>visa •••• 4242</small>" in found


def test_merchants_of_the_same_name_are_told_apart_in_lists(staff_client, api):
    twin = merchant_create(name="Acme Ltd", email="twin@acme.test").merchant
    payment = Payment.objects.get(pk=captured_payment(api)["id"])
    listing = page(staff_client, "/admin/payments/payment/")
    assert f"Acme Ltd<br><small>{payment.merchant_id}</small>" in listing
    assert twin.id != payment.merchant_id


def test_the_request_log_section_is_named_after_the_place(staff_client):
    index = page(staff_client, "/admin/")
    assert "API requests" in index and "API conventions" not in index


def test_values_read_as_a_person_reads_them():
    assert [shown_value(v) for v in (None, True, False, 8, "Y")] == ["—", "yes", "no", "8", "Y"]


def test_no_page_of_ours_shows_python_values_or_another_time_format(
    staff_client, api, receiver, endpoint_for
):
    """Every list (unscoped and for the merchant, test mode) and every object's page of our
    models, with a captured and refunded payment, a decline, failed and delivered webhooks,
    a request log entry."""
    endpoint, _ = endpoint_for(receiver)
    payment = captured_payment(api, amount=12000)
    refunded(api, payment["id"], amount=599)
    create(api, GENERIC_DECLINE)  # a declined payment: its outcome has nulls
    for n, delivery in enumerate(Delivery.objects.filter(endpoint=endpoint)):
        receiver.reply.status = 500 if n % 2 else 200
        delivery_run(delivery.id)
    RequestLogEntry.objects.create(
        id="req_1", merchant_id=endpoint.merchant_id, livemode=False, key_id="key_1",
        method="GET", path="/v1/payments", status=200, duration_ms=1.5,
        created=Payment.objects.get(pk=payment["id"]).created,
    )  # fmt: skip
    urls = []
    for model in admin.site._registry:
        if model._meta.app_label not in OUR_APPS:
            continue
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        urls += [base, f"{base}?merchant={endpoint.merchant_id}&livemode=0"]
        urls += [f"{base}{quote(obj.pk)}/change/" for obj in model.objects.all()[:3]]
    for url in urls:
        response = staff_client.get(url)
        if response.status_code == 302:  # a list without a merchant filter
            continue
        html = ONE_TIME_FORMAT.sub("", without_json(page(staff_client, url)))
        assert not PYTHON_VALUE.search(html), (url, PYTHON_VALUE.search(html))
        assert not OTHER_TIME.search(html), (
            url,
            html[OTHER_TIME.search(html).start() - 80 :][:160],
        )
