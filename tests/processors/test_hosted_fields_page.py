"""The hosted-fields page's answers without a browser (the browser's part: tests/browser/
test_hosted_fields.py): who may open it, what it loads, who may frame it; every refusal an
HTML page with a 4xx."""

from urllib.parse import urlencode

import pytest
from django.utils import timezone

from api.ids import new_id
from tests.processors.conftest import PUBLISHABLE_KEY, SECRET_KEY

PATH = "/processors/stripe/hosted-fields"
SHOP = "https://shop.example"


def open_page(client, new_merchant, *, key=None, **query):
    key = key if key is not None else new_merchant.keys["live"]["publishable"].secret
    return client.get(f"{PATH}?" + urlencode({"key": key, "currency": "eur", **query}))


def test_the_page_loads_stripe_js_with_the_routed_accounts_key(
    client, new_merchant, stripe_account, localstripe, settings
):
    settings.STRIPE_JS_URL = f"{localstripe.url}/js.stripe.com/v3/"
    response = open_page(client, new_merchant, origin=SHOP)
    assert response.status_code == 200
    page = response.content.decode()
    assert f'src="{localstripe.url}/js.stripe.com/v3/"' in page
    assert PUBLISHABLE_KEY in page and SECRET_KEY not in page
    policy = response["Content-Security-Policy"]
    assert f"script-src {localstripe.url} 'nonce-" in policy
    assert f"connect-src 'self' {localstripe.url};" in policy
    assert policy.endswith(f"frame-ancestors {SHOP}")
    assert "X-Frame-Options" not in response  # frame-ancestors decides


def test_stripes_own_script_brings_stripes_own_sources(client, new_merchant, stripe_account):
    stripe_account.api_base = ""
    stripe_account.save()
    policy = open_page(client, new_merchant, origin=SHOP)["Content-Security-Policy"]
    assert "script-src https://js.stripe.com 'nonce-" in policy
    assert "connect-src 'self' https://js.stripe.com https://api.stripe.com;" in policy
    assert "https://hooks.stripe.com" in policy


def test_with_only_a_return_url_no_site_may_frame_it(client, new_merchant, stripe_account):
    response = open_page(client, new_merchant, return_url=f"{SHOP}/back")
    assert response.status_code == 200
    assert response["Content-Security-Policy"].endswith("frame-ancestors 'none'")


@pytest.mark.parametrize(
    "key", ["", "svc_pk_live_" + "m" * 24, "test publishable", "live secret", "test secret"]
)
def test_only_the_live_publishable_key_opens_it(client, new_merchant, stripe_account, key):
    keys = new_merchant.keys
    named = {
        "test publishable": keys["test"]["publishable"].secret,
        "live secret": keys["live"]["secret"].secret,
        "test secret": keys["test"]["secret"].secret,
    }
    response = open_page(client, new_merchant, key=named.get(key, key), origin=SHOP)
    assert response.status_code == 403
    assert "live publishable key" in response.content.decode()


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"origin": f"{SHOP}/checkout"},
        {"origin": "javascript:alert(1)"},
        {"origin": "*"},
        {"return_url": "/back"},
        {"return_url": "javascript:alert(1)"},
        {"origin": SHOP, "currency": "xyz"},
    ],
)
def test_a_bad_way_back_or_currency_is_a_400_page(client, new_merchant, stripe_account, query):
    response = open_page(client, new_merchant, **query)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("field", ["revoked_at", "expires_at"])
def test_a_key_out_of_force_is_refused(client, new_merchant, stripe_account, field):
    key = new_merchant.keys["live"]["publishable"].api_key
    setattr(key, field, timezone.now())
    key.save()
    assert open_page(client, new_merchant, origin=SHOP).status_code == 403


def test_without_a_route_it_is_a_422_page(client, new_merchant, stripe_account):
    response = open_page(client, new_merchant, origin=SHOP, currency="gbp")
    assert response.status_code == 422
    assert "No connector account serves card in gbp" in response.content.decode()


def test_an_address_over_its_limit_is_a_429_page(
    client, new_merchant, stripe_account, settings, time_machine
):
    """As every caller without a secret key: per client address, whatever key it shows."""
    store = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": new_id("x")}
    settings.CACHES = {**settings.CACHES, "ratelimit": store}  # a bucket store of its own
    settings.API_RATE_LIMIT_CACHE = "ratelimit"
    settings.API_ADDRESS_RATE_LIMIT = {"rate": 0.5, "burst": 2}
    time_machine.move_to("2026-11-25T00:00:00Z", tick=False)
    made_up = "svc_pk_live_" + "m" * 24
    statuses = [open_page(client, new_merchant, key=made_up, origin=SHOP).status_code]
    statuses.append(open_page(client, new_merchant, key=made_up, origin=SHOP).status_code)
    refused = open_page(client, new_merchant, origin=SHOP)
    assert statuses == [403, 403]
    assert refused.status_code == 429 and refused["Retry-After"] == "2"
