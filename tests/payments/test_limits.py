"""The per-account transaction limit: the merchant's own, else the documented default
(settings.PAYMENT_TRANSACTION_LIMIT); editable by support staff in the merchant admin."""

import re

import pytest

from accounts.models import Merchant
from tests.payments.support import APPROVED, create, error_of


def test_the_default_limit_applies_to_a_merchant_without_its_own(api, merchant, settings):
    assert merchant.transaction_limit is None
    settings.PAYMENT_TRANSACTION_LIMIT = 5000
    assert create(api, APPROVED, amount=5000).status_code == 201
    error = error_of(
        create(api, APPROVED, amount=5001), 422, "processing_error", "amount_above_limit"
    )
    assert "5000" in error["message"]


def test_the_merchants_own_limit_wins_over_the_default(api, merchant, settings):
    settings.PAYMENT_TRANSACTION_LIMIT = 5000
    merchant.transaction_limit = 8000
    merchant.save()
    assert create(api, APPROVED, amount=8000).status_code == 201
    error_of(create(api, APPROVED, amount=8001), 422, "processing_error", "amount_above_limit")


def test_alternative_methods_are_limited_too(api, merchant):
    merchant.transaction_limit = 100
    merchant.save()
    response = create(api, None, amount=101, method_type="ideal")
    error_of(response, 422, "processing_error", "amount_above_limit")


def form_fields(html: str) -> dict:
    """The inputs of the admin's change form, as the browser would send them back."""
    fields = {}
    for tag in re.findall(r"<(?:input|textarea)[^>]*>(?:[^<]*</textarea>)?", html):
        name = re.search(r'name="([^"]+)"', tag)
        if not name or 'type="submit"' in tag or 'type="checkbox"' in tag:
            continue
        if tag.startswith("<textarea"):
            value = re.search(r">([^<]*)</textarea>", tag)[1]
        else:
            value = (re.search(r'value="([^"]*)"', tag) or [None, ""])[1]
        fields[name[1]] = value.replace("&quot;", '"')
    return fields


def test_support_staff_set_the_limit_in_the_merchant_admin(staff_client, merchant):
    path = f"/admin/accounts/merchant/{merchant.pk}/change/"
    fields = form_fields(staff_client.get(path).content.decode())
    assert "transaction_limit" in fields
    response = staff_client.post(path, {**fields, "transaction_limit": "250000"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Merchant.objects.get(pk=merchant.pk).transaction_limit == 250000


@pytest.mark.parametrize(
    "pricing, message",
    [
        ('{"type": "flat", "rate_bps": 100}', "pricing.type must be blended or interchange_plus"),
        ('{"type": "blended", "rate_bps": -1}', "pricing.rate_bps must be a non-negative integer"),
        ('{"type": "blended", "rate_bps": 100, "fixed": {"eur": "25"}}', "pricing.fixed.eur"),
        ("[1, 2]", "pricing must be an object"),
    ],
)
def test_a_malformed_pricing_schedule_is_a_form_error_not_a_500_later(
    staff_client, merchant, pricing, message
):
    path = f"/admin/accounts/merchant/{merchant.pk}/change/"
    fields = form_fields(staff_client.get(path).content.decode())
    response = staff_client.post(path, {**fields, "pricing": pricing})
    assert response.status_code == 200  # the form again, with the error
    assert message in response.content.decode()
    assert Merchant.objects.get(pk=merchant.pk).pricing == {}
    good = '{"type": "blended", "rate_bps": 140, "fixed": {"eur": 25}}'
    assert staff_client.post(path, {**fields, "pricing": good}).status_code == 302
    assert Merchant.objects.get(pk=merchant.pk).pricing["rate_bps"] == 140
