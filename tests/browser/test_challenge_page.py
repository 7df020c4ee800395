"""The 3-D Secure challenge page in a real browser: each answer takes the payer back to the
merchant's return_url, and the challenge URL (the session's credential) never reaches the
merchant in a Referer (docs/request-safety.md "Browser pages")."""

import pytest

from tests.payments.support import CHALLENGE

pytestmark = pytest.mark.django_db(transaction=True)

RETURN_URL = "https://shop.example/back?order=1"


@pytest.fixture
def merchant_site(page):
    """The merchant's return page, answered by Playwright instead of the network: the
    requests the browser made for it."""
    arrivals = []

    def answer(route):
        arrivals.append(route.request)
        route.fulfill(status=200, content_type="text/html", body="<h1>Back at the shop</h1>")

    page.route("https://shop.example/**", answer)
    return arrivals


@pytest.mark.parametrize(
    ("button", "status"), [("Approve", "captured"), ("Decline", "declined"), ("Timeout", "failed")]
)
def test_each_answer_returns_the_payer_to_the_merchant(
    site, http, page, merchant_site, button, status
):
    payment = http.payment(CHALLENGE, return_url=RETURN_URL)
    challenge_url = payment["next_action"]["redirect"]["url"]
    assert challenge_url.startswith(f"{site}/sandbox/challenge/")
    page.goto(challenge_url)
    with page.expect_request(RETURN_URL):
        page.get_by_role("button", name=button).click()
    page.wait_for_url(RETURN_URL)
    assert page.get_by_role("heading").inner_text() == "Back at the shop"
    [arrival] = [request for request in merchant_site if request.is_navigation_request()]
    assert arrival.method == "GET"
    assert "referer" not in arrival.all_headers()
    assert http.get(f"/v1/payments/{payment['id']}").json()["status"] == status


def test_the_form_post_carries_the_pages_own_origin(site, http, page, merchant_site):
    """Django's CSRF check compares Origin with the site: `Origin: null` (what a strict
    referrer policy makes a browser send) is refused."""
    payment = http.payment(CHALLENGE, return_url=RETURN_URL)
    page.goto(payment["next_action"]["redirect"]["url"])
    with page.expect_request(lambda request: request.method == "POST") as posted:
        page.get_by_role("button", name="Approve").click()
    assert posted.value.all_headers()["origin"] == site
    page.wait_for_url(RETURN_URL)
