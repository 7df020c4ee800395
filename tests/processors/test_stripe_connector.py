"""The Stripe connector end to end: live-mode requests through our API, the official library,
real HTTP, and localstripe answering as Stripe (tests/support/localstripe.py). What the
emulator holds afterwards is counted there, not taken from our own rows."""

import pytest

from payments.models import Payment
from processors.models import ProcessorObject
from processors.objects import Kind, linked
from tests.processors.conftest import SECRET_KEY, live_token

pytestmark = pytest.mark.django_db(transaction=True)


def create(live_api, token, key, **body):
    body = {
        "amount": 2599,
        "currency": "eur",
        "reference": key,
        "payment_method": {"type": "card", "token": token.id},
        **body,
    }
    return live_api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def intents(localstripe) -> list[dict]:
    return localstripe.list("payment_intents", SECRET_KEY)


def test_an_automatic_live_payment_is_captured_at_stripe(
    live_api, merchant, stripe_account, localstripe
):
    answer = create(live_api, live_token(stripe_account, merchant), "order-1")

    assert answer.status_code == 201, answer.json()
    payment = answer.json()
    assert payment["status"] == "captured" and payment["livemode"] is True
    assert payment["amount_captured"] == 2599
    assert payment["outcome"]["response_code"] == "00"
    card = payment["method"]["card"]
    assert (card["brand"], card["last4"], card["funding"]) == ("visa", "4242", "credit")
    assert card["issuer_country"] == "FR"  # the emulator's, not the simulator's
    [intent] = intents(localstripe)
    assert intent["status"] == "succeeded" and intent["amount"] == 2599
    assert intent["metadata"]["svc_payment"] == payment["id"]
    assert linked(Kind.PAYMENT, payment["id"]).processor_id == intent["id"]


def test_a_manual_payment_is_authorized_then_partly_captured(
    live_api, merchant, stripe_account, localstripe
):
    token = live_token(stripe_account, merchant)
    payment = create(live_api, token, "order-2", capture_method="manual").json()
    assert payment["status"] == "authorized"
    assert intents(localstripe)[0]["status"] == "requires_capture"

    captured = live_api.post(
        f"/v1/payments/{payment['id']}/captures",
        {"amount": 1000},
        format="json",
        HTTP_IDEMPOTENCY_KEY="capture-2",
    )

    assert captured.status_code == 200, captured.json()
    assert captured.json()["status"] == "captured"
    assert captured.json()["amount_captured"] == 1000
    [intent] = intents(localstripe)
    assert intent["status"] == "succeeded"
    [charge] = localstripe.list("charges", SECRET_KEY)
    assert charge["captured"] and charge["amount"] - charge["amount_refunded"] == 1000


def test_a_void_cancels_the_payment_intent(live_api, merchant, stripe_account, localstripe):
    payment = create(
        live_api, live_token(stripe_account, merchant), "order-3", capture_method="manual"
    ).json()

    canceled = live_api.post(
        f"/v1/payments/{payment['id']}/cancel", {}, format="json", HTTP_IDEMPOTENCY_KEY="void-3"
    )

    assert canceled.status_code == 200, canceled.json()
    assert canceled.json()["status"] == "canceled"
    assert intents(localstripe)[0]["status"] == "canceled"


def test_a_declined_card_is_a_402_with_the_mapped_decline(
    live_api, merchant, stripe_account, localstripe
):
    answer = create(live_api, live_token(stripe_account, merchant, "4000000000000341"), "order-4")

    assert answer.status_code == 402, answer.json()
    error = answer.json()["error"]
    assert error["decline_code"] == "generic_decline"  # the emulator answers every decline so
    payment = Payment.objects.get(merchant=merchant, reference="order-4")
    assert payment.status == "declined"
    assert payment.outcome["decline_is_soft"] is False and payment.outcome["response_code"] == "05"
    assert intents(localstripe)[0]["status"] == "requires_payment_method"


def test_a_partial_refund_is_made_at_stripe_and_linked(
    live_api, merchant, stripe_account, localstripe
):
    payment = create(live_api, live_token(stripe_account, merchant), "order-5").json()

    refund = live_api.post(
        f"/v1/payments/{payment['id']}/refunds",
        {"amount": 599},
        format="json",
        HTTP_IDEMPOTENCY_KEY="refund-5",
    )

    assert refund.status_code == 201, refund.json()
    assert refund.json()["status"] == "succeeded"
    [made] = localstripe.list("refunds", SECRET_KEY)
    assert made["amount"] == 599 and made["metadata"]["svc_refund"] == refund.json()["id"]
    assert linked(Kind.REFUND, refund.json()["id"]).processor_id == made["id"]
    assert live_api.get(f"/v1/payments/{payment['id']}").json()["amount_refunded"] == 599


def test_a_card_that_needs_3ds_sends_the_payer_to_our_authentication_page(
    live_api, merchant, stripe_account, localstripe
):
    answer = create(
        live_api,
        live_token(stripe_account, merchant, "4000002500003155"),
        "order-6",
        return_url="https://shop.example/return",
    )

    assert answer.status_code == 201, answer.json()
    payment = answer.json()
    assert payment["status"] == "requires_action"
    url = payment["next_action"]["redirect"]["url"]
    assert "/processors/stripe/authenticate/" in url
    assert payment["next_action"]["redirect"]["return_url"] == "https://shop.example/return"
    assert intents(localstripe)[0]["status"] == "requires_action"


def test_a_token_of_another_account_is_refused_and_given_back(
    live_api, merchant, stripe_account, localstripe
):
    from tests.processors.conftest import connector_account

    other = connector_account(localstripe.url, name="Other")
    token = live_token(other, merchant)

    answer = create(live_api, token, "order-7")

    assert answer.status_code == 400, answer.json()
    assert answer.json()["error"]["code"] == "token_invalid"
    token.refresh_from_db()
    assert token.used_at is None  # nothing was processed: the token is given back
    assert intents(localstripe) == []


def test_a_revoked_account_answers_no_route(live_api, merchant, stripe_account, localstripe):
    from django.utils import timezone

    token = live_token(stripe_account, merchant)
    stripe_account.revoked_at = timezone.now()
    stripe_account.save()

    answer = create(live_api, token, "order-8")

    assert answer.status_code == 422, answer.json()
    assert answer.json()["error"]["code"] == "no_route"
    assert intents(localstripe) == []
    assert not ProcessorObject.objects.filter(kind=Kind.PAYMENT).exists()


def test_a_request_stripe_refuses_as_invalid_is_a_422_never_a_500(
    live_api, merchant, stripe_account, localstripe
):
    token = live_token(stripe_account, merchant)
    ProcessorObject.objects.filter(our_id=token.id).update(processor_id="pm_gone_at_stripe")

    answer = create(live_api, token, "order-9")

    assert answer.status_code == 422, answer.json()
    assert answer.json()["error"]["code"] == "payment_failed"
    assert not Payment.objects.filter(reference="order-9").exists()
    token.refresh_from_db()
    assert token.used_at is None
