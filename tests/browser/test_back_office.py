"""The support journeys in a real browser (issue 14, docs/back-office.md): find a payment by
last4, read its timeline, refund it and see `refund.created`, resend an event, requeue a dead
letter; a view-only user is offered no revocation. Screenshots of the payment page and the
deliveries list are taken each run; UPDATE_SCREENSHOTS=1 keeps them in docs/ for the README."""

import os
from importlib import import_module
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Group, User
from django.utils import timezone

from events.models import Event
from tests.refunds.support import captured_payment
from tests.webhooks.conftest import (  # noqa: F401  (fixtures)
    ca_bundle,
    endpoint_for,
    loopback_allowed,
    receiver,
    webhook_ca,
)
from webhooks.attempts import delivery_run
from webhooks.models import Delivery, WebhookEndpoint

pytestmark = pytest.mark.django_db(transaction=True)

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture
def shots(tmp_path) -> Path:
    return DOCS if os.environ.get("UPDATE_SCREENSHOTS") else tmp_path


def log_in(page, site, username):
    page.goto(f"{site}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "a long and unlikely passphrase")
    page.click("input[type=submit]")
    page.wait_for_url(f"{site}/admin/")


@pytest.fixture
def support(site, page):
    User.objects.create_superuser("lead", "lead@example.test", "a long and unlikely passphrase")
    log_in(page, site, "lead")
    return page


def test_find_by_last4_read_the_timeline_refund_and_resend(
    site,
    support,
    shots,
    api,
    receiver,  # noqa: F811 (the fixtures imported above)
    endpoint_for,  # noqa: F811
):
    page = support
    endpoint, _ = endpoint_for(receiver)
    payment = captured_payment(api, amount=12000)
    for delivery in Delivery.objects.filter(endpoint=endpoint):
        delivery_run(delivery.id)
    page.set_viewport_size({"width": 1600, "height": 900})
    page.goto(f"{site}/admin/payments/payment/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1600  # no sideways scroll
    page.fill("#searchbar", "4242")
    page.press("#searchbar", "Enter")
    page.click(f"text={payment['id']}")
    timeline = page.locator("#timeline")
    assert "payment.captured" in timeline.inner_text()
    assert "delivered" in timeline.inner_text() and "120.00 EUR" in page.content()
    page.screenshot(path=str(shots / "back-office-payment.png"), full_page=True)

    page.click("#action-refund")
    page.fill("#id_amount", "25.00")  # EUR, as the page shows amounts
    page.fill("#id_reason", "damaged")
    page.click("input[type=submit]")
    page.wait_for_url(f"{site}/admin/payments/payment/{quote(payment['id'])}/change/")
    refund_created = Event.objects.get(type="refund.created")
    assert refund_created.data["object"]["amount"] == 2500
    assert refund_created.id in page.locator("#timeline").inner_text()

    captured = Event.objects.get(type="payment.captured", resource_id=payment["id"])
    page.click(f"a[href='/admin/events/event/{quote(captured.id)}/resend/']")
    page.click("input[type=submit]")
    assert "Resent: deliveries" in page.locator(".messagelist").inner_text()
    assert Delivery.objects.get(event=captured).next_attempt_at is not None


def test_requeue_a_dead_letter(site, support, shots, api, receiver, endpoint_for):  # noqa: F811
    page = support
    endpoint, _ = endpoint_for(receiver)
    receiver.reply.status, receiver.reply.body = 500, b"down for maintenance"
    captured_payment(api)
    delivery = Delivery.objects.filter(endpoint=endpoint).first()
    delivery_run(delivery.id)
    Delivery.objects.filter(pk=delivery.id).update(status="dead_lettered", next_attempt_at=None)
    page.goto(f"{site}/admin/webhooks/delivery/")
    assert "down for maintenance" not in page.content()  # the error column, not the body
    assert "500" in page.content()
    page.screenshot(path=str(shots / "back-office-deliveries.png"), full_page=True)
    page.goto(f"{site}/admin/webhooks/deadletter/")
    page.check(f"input[name=_selected_action][value='{delivery.id}']")
    page.select_option("select[name=action]", "resend_dead_letters")
    page.click("button[name=index]")
    page.click("input[type=submit]")
    assert "Requeue dead letters: 1 done." in page.locator(".messagelist").inner_text()
    assert Delivery.objects.get(pk=delivery.id).status == "pending"


def test_a_disabled_endpoint_shows_its_health_and_is_re_enabled(
    site,
    support,
    api,
    receiver,  # noqa: F811
    endpoint_for,  # noqa: F811
):
    """Issue 25: the endpoint's page at 1,280 px shows its health and its Re-enable button,
    which re-enables it through the service the API calls."""
    page = support
    endpoint, _ = endpoint_for(receiver)
    receiver.reply.status, receiver.reply.body = 500, b"down for maintenance"
    captured_payment(api)
    delivery_run(Delivery.objects.filter(endpoint=endpoint).first().id)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(disabled_at=timezone.now())
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{site}/admin/webhooks/webhookendpoint/{quote(endpoint.pk)}/change/")
    assert "1 failures in a row" in page.inner_text("#content")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.click("#action-enable")
    page.click("input[type=submit]")
    assert f"Re-enabled {endpoint.pk}" in page.locator(".messagelist").inner_text()
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).disabled_at is None
    assert "#action-enable" not in page.content() and 'id="action-enable"' not in page.content()


def test_a_view_only_user_is_offered_no_revocation(site, page, new_merchant):
    import_module("refunds.migrations.0002_back_office_groups").create_groups(apps, None)
    user = User.objects.create_user(
        "reader", password="a long and unlikely passphrase", is_staff=True
    )
    user.groups.add(Group.objects.get(name="Read-only"))
    log_in(page, site, "reader")
    page.goto(f"{site}/admin/accounts/apikey/")
    assert new_merchant.keys["live"]["secret"].api_key.id in page.content()
    assert page.locator("select[name=action]").count() == 0
    assert "revoke_keys" not in page.content()
