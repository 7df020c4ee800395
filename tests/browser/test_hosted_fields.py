"""The hosted card fields in a real browser, against the Stripe emulator's own Stripe.js
stand-in: the card typed into the processor's fields becomes a live `tok_` handed to the
merchant's page by postMessage (framed) or by sending the payer to its return_url
(docs/processors.md "Hosted fields and live tokens")."""

import re
from urllib.parse import urlencode

import pytest

from payments.models import Token
from processors.objects import Kind, linked
from tests.browser.merchant_site import served_site

pytestmark = pytest.mark.django_db(transaction=True)

RETURN_URL = "https://shop.example/back?order=1"


@pytest.fixture
def shop():
    """The merchant's checkout."""
    yield from served_site()


@pytest.fixture
def elsewhere():
    """Another site, which must not frame the merchant's fields."""
    yield from served_site()


def hosted_fields_url(site, new_merchant, **query) -> str:
    key = new_merchant.keys["live"]["publishable"].secret
    return f"{site}/processors/stripe/hosted-fields?" + urlencode(
        {"key": key, "currency": "eur", **query}
    )


def type_card(frame, number="4242424242424242"):
    """Into the emulator's fields, as a payer types."""
    frame.get_by_placeholder("number").fill(number)
    frame.get_by_placeholder("exp_month").fill("12")
    frame.get_by_placeholder("exp_year").fill("30")
    frame.get_by_placeholder("cvc").fill("123")
    frame.get_by_role("button", name="Use this card").click()


def assert_live_token(token_id: str, account) -> Token:
    token = Token.objects.get(pk=token_id)
    assert token.livemode is True and token.used_at is None
    assert (token.brand, token.last4, token.exp_month, token.exp_year) == ("visa", "4242", 12, 2030)
    link = linked(Kind.TOKEN, token_id)
    assert link.account_id == account.id and link.processor_id.startswith("card_")
    return token


def test_a_framed_page_hands_the_token_to_its_parent(site, new_merchant, account, page, shop):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(shop.framing(hosted_fields_url(site, new_merchant, origin=shop.origin)))
    type_card(page.frame_locator("iframe"))
    received = page.evaluate("window.received")
    assert received["origin"] == site
    token = received["token"]
    assert token["object"] == "token" and token["livemode"] is True
    assert token["card"] == {
        "brand": "visa",
        "last4": "4242",
        "bin": "",
        "exp_month": 12,
        "exp_year": 2030,
    }
    assert_live_token(token["id"], account)


def test_without_a_frame_the_payer_is_sent_to_the_return_url(site, new_merchant, account, page):
    page.set_viewport_size({"width": 1280, "height": 800})
    arrivals = []

    def shop(route):
        arrivals.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<h1>Back at the shop</h1>")

    page.route("https://shop.example/**", shop)
    page.goto(hosted_fields_url(site, new_merchant, return_url=RETURN_URL))
    type_card(page)
    page.wait_for_url(re.compile(re.escape(RETURN_URL) + r"&token=tok_\w+$"))
    [arrival] = arrivals
    assert_live_token(arrival.rpartition("token=")[2], account)


def test_a_page_of_another_origin_cannot_frame_the_fields(
    site, new_merchant, account, page, shop, elsewhere
):
    """frame-ancestors names the merchant's origin: the same page framed by another site is
    refused by the browser, while the merchant's own frames it."""
    fields = hosted_fields_url(site, new_merchant, origin=shop.origin)
    page.goto(shop.framing(fields))
    page.frame_locator("iframe").get_by_placeholder("number").wait_for()
    with page.expect_event("console", lambda message: "frame-ancestors" in message.text):
        page.goto(elsewhere.framing(fields))
    assert page.frame_locator("iframe").get_by_placeholder("number").count() == 0
