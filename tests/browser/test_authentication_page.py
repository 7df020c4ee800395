"""3-D Secure through Stripe in a real browser (docs/processors.md "3-D Secure"): a live
payment whose card asks for authentication sends the payer to our page, which runs the
emulator's Stripe.js stand-in (its modal stands in for the bank's), then asks Stripe how it
ended and sends the payer to the merchant's return_url."""

import pytest

from tests.conftest import key_client
from tests.processors.conftest import RETURN_URL, payment_needing_3ds

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def merchant_site(page):
    """The merchant's return page, answered by Playwright: the URLs the browser came to."""
    arrivals = []

    def answer(route):
        arrivals.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<h1>Back at the shop</h1>")

    page.route("https://shop.example/**", answer)
    return arrivals


def arrive_at_the_shop(page) -> None:
    """The merchant's page, once shown (Chromium may abandon a first attempt at the
    redirect's target, which Playwright then answers: the page, not the navigation, counts)."""
    page.get_by_role("heading", name="Back at the shop").wait_for()
    assert page.url == RETURN_URL


def status_of(new_merchant, payment_id) -> str:
    live_api = key_client(new_merchant.keys["live"]["secret"].secret)
    return live_api.get(f"/v1/payments/{payment_id}").json()["status"]


@pytest.mark.parametrize(
    ("button", "status"),
    [("Complete authentication", "captured"), ("Fail authentication", "declined")],
)
def test_the_payer_authenticates_and_returns_to_the_merchant(
    site, new_merchant, account, page, merchant_site, button, status
):
    page.set_viewport_size({"width": 1280, "height": 800})
    live_api = key_client(new_merchant.keys["live"]["secret"].secret)
    payment = payment_needing_3ds(live_api, account, new_merchant.merchant)
    url = payment["next_action"]["redirect"]["url"]
    assert url.startswith(f"{site}/processors/stripe/authenticate/")
    page.goto(url)
    page.get_by_role("button", name=button).click()
    arrive_at_the_shop(page)
    assert merchant_site == [RETURN_URL]
    assert status_of(new_merchant, payment["id"]) == status
