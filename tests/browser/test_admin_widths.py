"""The admin's lists fit a 1,280 px screen (issue 24 item 4: the deliveries list needed
2,346 px, status and error off-screen): each big list, with the longest values its columns
can hold, is loaded at 1,280 px, nothing overflows sideways, and a screenshot is taken
(UPDATE_SCREENSHOTS=1 keeps them in docs/)."""

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from accounts.services import merchant_create
from api.models import RequestLogEntry
from events.services import emit
from tests.payments.support import APPROVED, MASTERCARD, created
from tests.refunds.support import captured_payment, refunded
from webhooks.models import Attempt, Delivery, WebhookEndpoint

pytestmark = pytest.mark.django_db(transaction=True)

DOCS = Path(__file__).resolve().parents[2] / "docs"
WIDTH = 1280
LONG_URL = "https://hooks.a-merchant-with-a-rather-long-domain-name.example/" + "webhooks/" * 8
LONG_ERROR = (
    "connection failed: the receiver closed the connection before answering "
    "(after TLS handshake; 10.0 s deadline reached)" * 2
)
LISTS = {
    "payments": "/admin/payments/payment/",
    "deliveries": "/admin/webhooks/delivery/",
    "dead-letters": "/admin/webhooks/deadletter/",
    "events": "/admin/events/event/",
    "refunds": "/admin/refunds/refund/",
    "endpoints": "/admin/webhooks/webhookendpoint/",
    "request-log": "/admin/api/requestlogentry/",  # no filters: unscoped only
}
# What must not be cut off: the table, and the page itself.
OVERFLOW = """() => {
  const page = document.documentElement.scrollWidth;
  const results = document.querySelector('.results');
  const table = document.querySelector('#result_list');
  return {
    page,
    results: results ? results.scrollWidth - results.clientWidth : 0,
    table_right: table ? Math.ceil(table.getBoundingClientRect().right) : 0,
  };
}"""


@pytest.fixture
def shots(tmp_path) -> Path:
    return DOCS if os.environ.get("UPDATE_SCREENSHOTS") else tmp_path


def worst_case_rows(api, merchant):
    """Rows with the longest values each column shows."""
    customer = {"email": "a.very.long.customer.name@a-long-customer-domain.example"}
    created(api, APPROVED, amount=99_999_999, reference="r" * 64, customer=customer)
    created(api, MASTERCARD, capture_method="manual", currency="jpy", amount=1_000_000)
    payment = captured_payment(api, amount=12000, description="d" * 200)
    refunded(api, payment["id"], amount=2500, reason="damaged " * 20)
    endpoint = WebhookEndpoint.objects.create(
        merchant=merchant,
        livemode=False,
        url=LONG_URL,
        enabled_events=["*"],
        secret_encrypted="-",
        secret_last4="abcd",
    )
    for n in range(3):
        with transaction.atomic():
            event = emit(
                merchant=merchant,
                livemode=False,
                type="payment.partially_captured",
                obj={"id": payment["id"], "object": "payment", "status": "captured"},
                fan_out=False,
            )
        delivery = Delivery.objects.create(
            event=event,
            endpoint=endpoint,
            status=Delivery.Status.DEAD_LETTERED if n else Delivery.Status.PENDING,
            attempt_count=16,
            next_attempt_at=timezone.now() if not n else None,
        )
        Attempt.objects.create(
            delivery=delivery,
            event=event,
            endpoint=endpoint,
            attempt=16,
            status=Attempt.Status.FAILED,
            http_status=503,
            error=LONG_ERROR,
            duration_ms=10_000,
            attempted_at=timezone.now(),
        )
    RequestLogEntry.objects.create(
        id="req_01J0000000000000000000000A",
        merchant_id=merchant.id,
        livemode=False,
        key_id="key_01J0000000000000000000000A",
        method="POST",
        path="/v1/payments/" + "p" * 300,
        status=402,
        error_type="card_error",
        error_code="card_declined",
        duration_ms=12.5,
        created=timezone.now(),
    )


DOCUMENTED = {"payments", "deliveries"}  # the screenshots docs/back-office.md shows


def test_admin_lists_fit_1280_px(site, page, api, merchant, shots, tmp_path):
    merchant.name = "A merchant with a long trading name GmbH & Co. KG"
    merchant.save()
    merchant_create(name="Another merchant", email="other@example.test")
    worst_case_rows(api, merchant)
    User.objects.create_superuser("lead", "lead@example.test", "a long and unlikely passphrase")
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(f"{site}/admin/login/")
    page.fill("#id_username", "lead")
    page.fill("#id_password", "a long and unlikely passphrase")
    page.click("input[type=submit]")
    page.wait_for_url(f"{site}/admin/")
    measured = {}
    for name, url in LISTS.items():
        # The rows are test mode; a merchant's list shows live unless test is chosen.
        merchant_list = f"?merchant={merchant.id}&livemode=0"
        scopes = ("",) if name == "request-log" else ("", merchant_list)
        for scope in scopes:
            page.goto(f"{site}{url}{scope}")
            assert page.locator("#result_list tbody tr").count() >= 1, url
            measured[f"{name}{scope and ' (merchant)'}"] = page.evaluate(OVERFLOW)
            if scope:
                folder = shots if name in DOCUMENTED else tmp_path
                page.screenshot(path=str(folder / f"admin-{name}-1280.png"), full_page=True)
    too_wide = {
        name: m
        for name, m in measured.items()
        if m["page"] > WIDTH or m["results"] > 0 or m["table_right"] > WIDTH
    }
    assert not too_wide, too_wide
