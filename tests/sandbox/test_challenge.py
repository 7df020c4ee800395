"""The simulated 3-D Secure challenge page (decisions.md "Challenge page")."""

import datetime
import re

import pytest
from django.test import Client

from sandbox.models import ChallengeSession
from sandbox.tasks import purge_old_challenge_sessions
from tests.payments.support import APPROVED, CHALLENGE, CHALLENGE_DECLINE, created, event_types

RETURN_URL = "https://shop.example/back?order=1"


def challenge_path(payment: dict) -> str:
    url = payment["next_action"]["redirect"]["url"]
    assert url.startswith("http://127.0.0.1:8000/sandbox/challenge/")
    return url.removeprefix("http://127.0.0.1:8000")


@pytest.fixture
def browser():
    """The payer's browser: enforces CSRF like a real one would be held to."""
    return Client(enforce_csrf_checks=True)


def answer(browser, path, action):
    page = browser.get(path)
    assert page.status_code == 200
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())[1]
    return browser.post(path, {"action": action, "csrfmiddlewaretoken": token})


def test_page_shows_the_amount_as_the_payer_reads_it(api, browser):
    payment = created(api, CHALLENGE, return_url=RETURN_URL, amount=3000, currency="eur")
    html = browser.get(challenge_path(payment)).content.decode()
    assert "<dd>30.00 EUR</dd>" in html and "minor units" not in html


def test_page_shows_three_buttons(api, browser):
    payment = created(api, CHALLENGE, return_url=RETURN_URL)
    page = browser.get(challenge_path(payment))
    html = page.content.decode()
    assert page.status_code == 200 and page["Content-Type"] == "text/html; charset=utf-8"
    assert re.fullmatch(r"req_[0-9A-HJKMNP-TV-Z]{26}", page["X-Request-Id"])  # every response
    for action in ("approve", "decline", "timeout"):
        assert f'value="{action}"' in html
    assert "4242" not in html and "3220" in html
    assert page["Cache-Control"] == "no-store" and page["Referrer-Policy"] == "same-origin"
    assert page["X-Frame-Options"] == "DENY"


def test_approve_gives_the_cards_planned_outcome(api, browser):
    payment = created(api, CHALLENGE, return_url=RETURN_URL)
    response = answer(browser, challenge_path(payment), "approve")
    assert response.status_code == 303 and response["Location"] == RETURN_URL
    body = api.get(f"/v1/payments/{payment['id']}").json()
    assert body["status"] == "captured" and "next_action" not in body
    assert body["outcome"]["three_ds"] == {
        "status": "authenticated",
        "eci": "05",
        "version": "2.2.0",
    }
    assert event_types(payment["id"]) == [
        "payment.created",
        "payment.requires_action",
        "payment.captured",
    ]


def test_approve_on_the_challenge_then_decline_card_declines(api, browser):
    payment = created(api, CHALLENGE_DECLINE, return_url=RETURN_URL, capture_method="manual")
    answer(browser, challenge_path(payment), "approve")
    body = api.get(f"/v1/payments/{payment['id']}").json()
    assert body["status"] == "declined"
    assert (body["outcome"]["decline_code"], body["outcome"]["decline_is_soft"]) == (
        "do_not_honor",
        False,
    )


def test_decline_is_a_soft_sca_required_decline(api, browser):
    payment = created(api, CHALLENGE, return_url=RETURN_URL)
    answer(browser, challenge_path(payment), "decline")
    outcome = api.get(f"/v1/payments/{payment['id']}").json()["outcome"]
    assert (outcome["decline_code"], outcome["decline_is_soft"]) == ("sca_required", True)
    assert outcome["three_ds"]["status"] == "failed"
    assert event_types(payment["id"])[-1] == "payment.declined"


def test_timeout_fails_the_payment(api, browser):
    payment = created(api, CHALLENGE, return_url=RETURN_URL)
    answer(browser, challenge_path(payment), "timeout")
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "failed"
    assert event_types(payment["id"])[-1] == "payment.failed"


def test_approve_with_manual_capture_authorizes(api, browser):
    payment = created(
        api,
        APPROVED,
        return_url=RETURN_URL,
        capture_method="manual",
        metadata={"_svc_test_outcome": "requires_action"},
    )
    answer(browser, challenge_path(payment), "approve")
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "authorized"


def test_a_session_is_single_use(api, browser):
    payment = created(api, CHALLENGE, return_url=RETURN_URL)
    path = challenge_path(payment)
    answer(browser, path, "timeout")
    assert browser.get(path).status_code == 404
    replay = Client().post(path, {"action": "approve"})
    assert replay.status_code == 404
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "failed"


def test_session_ids_are_unguessable_and_bound_to_one_payment(api):
    first = created(api, CHALLENGE, return_url=RETURN_URL)
    second = created(api, CHALLENGE, return_url=RETURN_URL)
    sessions = {s.payment_id: s.id for s in ChallengeSession.objects.all()}
    assert sessions.keys() == {first["id"], second["id"]}
    assert all(len(session_id) >= 43 for session_id in sessions.values())
    assert Client().post("/sandbox/challenge/guess", {"action": "approve"}).status_code == 404
    for malformed in ("%00", "a%00b", "x" * 65):  # a NUL was a 500 from PostgreSQL
        assert Client().get(f"/sandbox/challenge/{malformed}").status_code == 404
        assert (
            Client().post(f"/sandbox/challenge/{malformed}", {"action": "approve"}).status_code
            == 404
        )
    Client().post(challenge_path(first), {"action": "approve"})
    assert api.get(f"/v1/payments/{second['id']}").json()["status"] == "requires_action"


def test_post_without_csrf_token_is_refused(api, browser):
    payment = created(api, CHALLENGE, return_url=RETURN_URL)
    assert browser.post(challenge_path(payment), {"action": "approve"}).status_code == 403
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "requires_action"


def test_unknown_action_changes_nothing(api):
    payment = created(api, CHALLENGE, return_url=RETURN_URL)
    assert Client().post(challenge_path(payment), {"action": "maybe"}).status_code == 400
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "requires_action"


def test_a_canceled_payments_challenge_is_gone(api):
    payment = created(api, CHALLENGE, return_url=RETURN_URL)
    api.post(f"/v1/payments/{payment['id']}/cancel")
    path = challenge_path(payment)
    assert Client().get(path).status_code == 410
    assert Client().post(path, {"action": "approve"}).status_code == 410
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "canceled"


def test_without_return_url_the_page_says_done(api):
    payment = created(api, CHALLENGE)
    response = Client().post(challenge_path(payment), {"action": "approve"})
    assert response.status_code == 200 and "captured" in response.content.decode()


def test_a_lapsed_challenge_cannot_be_approved(api, time_machine):
    """requires_action expires after 1 hour (spec "Payment statuses"): Approve a moment later,
    before the expiry sweep has run, used to capture the payment."""
    payment = created(api, CHALLENGE)
    time_machine.move_to(datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1))
    assert Client().post(challenge_path(payment), {"action": "approve"}).status_code == 410
    body = api.get(f"/v1/payments/{payment['id']}").json()
    assert body["status"] == "expired" and body["amount_captured"] == 0


def test_the_challenge_url_uses_the_public_base_url(api, settings):
    """decisions.md "Challenge page": `{challenge_url}` = `${PUBLIC_BASE_URL}/sandbox/challenge`."""
    settings.PUBLIC_BASE_URL = "https://pay.example.test"
    url = created(api, CHALLENGE)["next_action"]["redirect"]["url"]
    assert re.fullmatch(r"https://pay\.example\.test/sandbox/challenge/[A-Za-z0-9_-]{43}", url)


def test_challenge_sessions_are_purged_a_day_on(api, time_machine):
    payment = created(api, CHALLENGE)
    time_machine.move_to(datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=23))
    fresh = created(api, CHALLENGE)
    assert purge_old_challenge_sessions() == 0
    time_machine.move_to(
        datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1, seconds=1)
    )
    assert purge_old_challenge_sessions() == 1  # the first one only
    assert list(ChallengeSession.objects.values_list("payment_id", flat=True)) == [fresh["id"]]
    assert Client().get(challenge_path(payment)).status_code == 404  # gone with its session


def test_a_process_serving_the_api_alone_serves_the_page_and_takes_its_answer(
    api, browser, settings
):
    """serve.py web (SERVE=api) runs none of the back office's middleware (sessions, users,
    messages: config/settings/backoffice.py); the page's form still carries its CSRF check."""
    settings.MIDDLEWARE = [
        m for m in settings.MIDDLEWARE if m not in settings.ADMIN_ONLY_MIDDLEWARE
    ]
    settings.ROOT_URLCONF = "config.urls_api"
    payment = created(api, CHALLENGE, return_url=RETURN_URL)
    forged = browser.post(challenge_path(payment), {"action": "approve"})
    assert forged.status_code == 403
    response = answer(browser, challenge_path(payment), "approve")
    assert response.status_code == 303 and response["Location"] == RETURN_URL
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "captured"
