"""The per-account transaction limit: the merchant's own, else the documented default
(settings.PAYMENT_TRANSACTION_LIMIT); editable by support staff in the merchant admin."""

import re

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
