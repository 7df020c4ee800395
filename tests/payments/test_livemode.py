"""Test mode and live mode never meet (spec "Authentication" 3 and 6, ARCHITECTURE.md "Test
mode and live mode"): a resource of one mode is 404 to a key of the other mode of the same
merchant, on every endpoint, nothing about it changes, and lists never mix modes."""

import pytest

from payments.models import Payment, Route, Token
from refunds.models import Refund
from tests.factories import PaymentFactory, RefundFactory
from tests.payments.support import created, error_of, payment_body, tokenize

ACQUIRER = "tests.support.connectors.ApprovingConnector"


def not_found(response):
    error_of(response, 404, "not_found_error", "resource_not_found")


@pytest.fixture
def live_payments(merchant):
    """One live payment in each status an endpoint acts on."""
    return {
        "pending": PaymentFactory(merchant=merchant, livemode=True),
        "authorized": PaymentFactory(merchant=merchant, livemode=True, authorized=True),
        "captured": PaymentFactory(merchant=merchant, livemode=True, captured=True),
        "processing": PaymentFactory(merchant=merchant, livemode=True, processing=True),
    }


def test_a_live_payment_is_404_to_the_test_key_everywhere(api, live_payments):
    token = tokenize(api)
    confirm = {"payment_method": {"type": "card", "token": token}}
    calls = [
        ("get", "pending", "", None),
        ("post", "pending", "/confirm", confirm),
        ("post", "authorized", "/captures", {}),
        ("post", "authorized", "/cancel", {}),
        ("post", "captured", "/refunds", {}),
    ]
    for method, status, action, body in calls:
        payment = live_payments[status]
        not_found(getattr(api, method)(f"/v1/payments/{payment.pk}{action}", body, format="json"))
    not_found(api.post(f"/v1/sandbox/advance/{live_payments['processing'].pk}"))
    for status, payment in live_payments.items():
        payment.refresh_from_db()
        assert payment.status == status
    assert not Refund.objects.exists()
    assert Token.objects.get(pk=token).used_at is None  # the 404 came before the token was spent


def test_a_test_payment_is_404_to_the_live_key_everywhere(api, live_api):
    pending = created(api, None)
    authorized = created(api, capture_method="manual")
    captured = created(api)
    token = tokenize(api)
    confirm = {"payment_method": {"type": "card", "token": token}}
    not_found(live_api.get(f"/v1/payments/{pending['id']}"))
    not_found(live_api.post(f"/v1/payments/{pending['id']}/confirm", confirm, format="json"))
    not_found(live_api.post(f"/v1/payments/{authorized['id']}/captures", {}, format="json"))
    not_found(live_api.post(f"/v1/payments/{authorized['id']}/cancel"))
    not_found(live_api.post(f"/v1/payments/{captured['id']}/refunds", {}, format="json"))
    statuses = dict(Payment.objects.values_list("pk", "status"))
    assert [statuses[p["id"]] for p in (pending, authorized, captured)] == [
        "pending",
        "authorized",
        "captured",
    ]
    assert not Refund.objects.exists()


def test_refunds_are_404_to_the_other_mode(api, live_api, merchant):
    live_refund = RefundFactory(payment__merchant=merchant, payment__livemode=True)
    assert live_refund.livemode
    not_found(api.get(f"/v1/refunds/{live_refund.pk}"))
    assert live_api.get(f"/v1/refunds/{live_refund.pk}").json()["id"] == live_refund.pk


def test_lists_never_mix_modes(api, live_api, merchant, settings):
    settings.PAYMENT_CONNECTORS = {**settings.PAYMENT_CONNECTORS, "acquirer": ACQUIRER}
    Route.objects.create(
        merchant=merchant, method_type="ideal", currency="eur", connector="acquirer"
    )
    test_ids = {created(api)["id"], created(api, None)["id"]}
    response = live_api.post("/v1/payments", payment_body(method_type="ideal"), format="json")
    assert response.status_code == 201, response.content
    live_ids = {response.json()["id"], PaymentFactory(merchant=merchant, livemode=True).pk}

    def listed(client, **params):
        body = client.get("/v1/payments", params).json()
        return {item["id"] for item in body["data"]}, {item["livemode"] for item in body["data"]}

    assert listed(api) == (test_ids, {False})
    assert listed(live_api) == (live_ids, {True})
    # Filters and cursors stay inside the key's mode.
    assert listed(live_api, status="captured,pending")[0] == live_ids
    assert listed(api, starting_after=max(live_ids | test_ids))[1] <= {False}


def test_a_test_token_cannot_pay_in_live_mode(api, live_api, merchant, settings):
    settings.PAYMENT_CONNECTORS = {**settings.PAYMENT_CONNECTORS, "acquirer": ACQUIRER}
    Route.objects.create(
        merchant=merchant, method_type="card", currency="eur", connector="acquirer"
    )
    token = tokenize(api)
    response = live_api.post("/v1/payments", payment_body(token), format="json")
    assert error_of(response, 400, "validation_error", "token_invalid")["param"] == (
        "payment_method.token"
    )
    assert not Payment.objects.exists() and Token.objects.get(pk=token).used_at is None
