"""The 3-D Secure page's answers without a browser (the browser's part: tests/browser/
test_authentication_page.py): what it serves, and that every way back ends at the merchant
and never in a 500."""

import pytest
from django.core import signing

from processors.stripe.authentication import SALT
from tests.processors.conftest import PUBLISHABLE_KEY, RETURN_URL, payment_needing_3ds


@pytest.fixture
def payment(live_api, stripe_account, merchant):
    return payment_needing_3ds(live_api, stripe_account, merchant)


def path_of(payment) -> str:
    url = payment["next_action"]["redirect"]["url"]
    return url[url.index("/processors/") :]


def test_the_page_runs_stripe_js_with_the_payment_intents_secret(
    client, payment, localstripe, settings
):
    settings.STRIPE_JS_URL = f"{localstripe.url}/js.stripe.com/v3/"
    response = client.get(path_of(payment))
    assert response.status_code == 200
    page = response.content.decode()
    assert f'src="{localstripe.url}/js.stripe.com/v3/"' in page
    assert PUBLISHABLE_KEY in page and "_secret_" in page  # the PaymentIntent's client secret
    policy = response["Content-Security-Policy"]
    assert f"script-src {localstripe.url} 'nonce-" in policy
    assert "form-action 'self' https://shop.example;" in policy
    assert "frame-ancestors 'none'" in policy
    assert response["Cache-Control"] == "no-store"


def test_coming_back_before_the_bank_answered_offers_to_try_again(client, payment, live_api):
    response = client.post(path_of(payment))
    assert response.status_code == 422
    assert "Try again" in response.content.decode()
    assert live_api.get(f"/v1/payments/{payment['id']}").json()["status"] == "requires_action"


def test_a_payment_answered_meanwhile_sends_the_payer_back_again(
    client, payment, live_api, localstripe
):
    """A reload, a second tab, the back button: the same ending, nothing asked again."""
    live_api.post(f"/v1/payments/{payment['id']}/cancel", format="json")
    for method in (client.get, client.post):
        response = method(path_of(payment))
        assert (response.status_code, response["Location"]) == (303, RETURN_URL)


def test_without_a_return_url_the_page_says_how_it_ended(
    client, live_api, stripe_account, merchant
):
    payment = payment_needing_3ds(live_api, stripe_account, merchant, return_url=None)
    live_api.post(f"/v1/payments/{payment['id']}/cancel", format="json")
    response = client.post(path_of(payment))
    assert response.status_code == 200
    assert "The payment is now <strong>canceled</strong>" in response.content.decode()


# Ids of their own: a signed value holds the time, and xdist's workers must collect the same ids.
@pytest.mark.parametrize(
    "signed",
    ["nonsense", signing.dumps("pay_1", salt="another")],
    ids=["nonsense", "signed-for-another-purpose"],
)
def test_a_bad_signature_is_a_404_page(client, db, signed):
    response = client.get(f"/processors/stripe/authenticate/{signed}")
    assert response.status_code == 404
    assert "no longer available" in response.content.decode()


def test_a_signed_id_of_no_payment_is_a_404_page(client, db):
    response = client.post(f"/processors/stripe/authenticate/{signing.dumps('pay_1', salt=SALT)}")
    assert response.status_code == 404
