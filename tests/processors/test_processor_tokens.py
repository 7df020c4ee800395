"""POST /v1/processor-tokens: a Stripe payment-method reference exchanged for a live `tok_`
with the live publishable key (docs/processors.md "Hosted fields and live tokens"), against
the emulator."""

import datetime

import pytest

from api.errors import ValidationFailed
from payments.methods import get_method
from payments.models import Token
from payments.tokens import token_take
from processors.objects import Kind, linked
from processors.stripe.client import stripe_client
from tests.payments.support import error_of

PATH = "/v1/processor-tokens"
CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}


@pytest.fixture
def account(stripe_account):
    """The merchant's Stripe account at the emulator, routed for cards in EUR and USD."""
    return stripe_account


def payment_method(account, **card) -> str:
    """A `pm_` made at the emulator, as Stripe.js makes one in the payer's browser."""
    made = stripe_client(account).v1.payment_methods.create(
        params={"type": "card", "card": {**CARD, **card}}
    )
    return made.id


def stripe_token(account):
    """A Stripe `tok_`, as Stripe.js's `createToken` makes one."""
    return stripe_client(account).v1.tokens.create(params={"card": CARD})


def exchange(client, reference, currency="eur"):
    body = {"processor_reference": reference, "currency": currency}
    return client.post(PATH, body, format="json")


def test_a_payment_method_becomes_a_live_token_linked_to_it(
    live_publishable_api, account, time_machine
):
    time_machine.move_to(datetime.datetime(2030, 5, 1, 10, 0, tzinfo=datetime.UTC), tick=False)
    reference = payment_method(account, number="4000056655665556", exp_month=7, exp_year=2031)
    response = exchange(live_publishable_api, reference)
    assert response.status_code == 201, response.content
    token = response.json()
    assert token["object"] == "token" and token["type"] == "card" and token["livemode"] is True
    assert token["card"] == {
        "brand": "visa",
        "last4": "5556",
        "bin": "",
        "exp_month": 7,
        "exp_year": 2031,
    }
    assert (token["created"], token["expires_at"]) == (
        "2030-05-01T10:00:00Z",
        "2030-05-01T10:15:00Z",
    )
    link = linked(Kind.TOKEN, token["id"])
    assert (link.account_id, link.processor_id) == (account.id, reference)
    row = Token.objects.get(pk=token["id"])
    assert row.fingerprint and row.planned_outcome == "" and row.used_at is None


def test_a_stripe_token_is_kept_as_its_card(live_publishable_api, account):
    made = stripe_token(account)
    response = exchange(live_publishable_api, made.id)
    assert response.status_code == 201, response.content
    assert response.json()["card"]["brand"] == "visa"
    assert linked(Kind.TOKEN, response.json()["id"]).processor_id == made.card.id


def test_the_secret_key_may_exchange_too(live_api, account):
    assert exchange(live_api, payment_method(account)).status_code == 201


@pytest.mark.parametrize("reference", ["pm_nosuchthing", "tok_nosuchthing", "card_1", "src_1"])
def test_an_unknown_reference_is_token_invalid(live_publishable_api, account, reference):
    error = error_of(
        exchange(live_publishable_api, reference), 400, "validation_error", "token_invalid"
    )
    assert error["param"] == "processor_reference"
    assert not Token.objects.exists()


def test_a_reference_is_exchanged_once(live_publishable_api, account):
    reference = payment_method(account)
    assert exchange(live_publishable_api, reference).status_code == 201
    error_of(exchange(live_publishable_api, reference), 400, "validation_error", "token_invalid")
    assert Token.objects.count() == 1


def test_without_a_live_card_route_in_the_currency_it_is_no_route(live_publishable_api, account):
    reference = payment_method(account)
    error_of(exchange(live_publishable_api, reference, "gbp"), 422, "processing_error", "no_route")


def test_a_revoked_account_serves_no_route(live_publishable_api, account):
    reference = payment_method(account)
    account.revoked_at = account.created
    account.save()
    error_of(exchange(live_publishable_api, reference), 422, "processing_error", "no_route")


@pytest.mark.parametrize("client", ["publishable_api", "api"])
def test_a_test_key_keeps_the_simulators_tokenizer(request, client, account):
    response = exchange(request.getfixturevalue(client), payment_method(account))
    error = error_of(response, 403, "authorization_error", "live_mode_required")
    assert "/v1/sandbox/tokens" in error["message"]


def test_the_raw_card_guard_refuses_a_card_number(live_publishable_api, account):
    response = live_publishable_api.post(
        PATH,
        {"processor_reference": "4242424242424242", "currency": "eur"},
        format="json",
    )
    error = error_of(response, 400, "validation_error", "raw_card_data_not_allowed")
    assert error["param"] == "processor_reference"
    assert "4242424242424242" not in response.content.decode()
    assert not Token.objects.exists()


def test_stripe_unreachable_is_connector_http_error(live_publishable_api, account):
    reference = payment_method(account)
    account.api_base = "http://127.0.0.1:9"  # nothing listens there
    account.save()
    error_of(exchange(live_publishable_api, reference), 502, "api_error", "connector_http_error")
    assert not Token.objects.exists()


def test_the_live_token_is_single_use(live_publishable_api, account, merchant):
    """Spent by payments.tokens.token_take as any token: a second take is token_invalid."""
    token_id = exchange(live_publishable_api, payment_method(account)).json()["id"]
    card = get_method("card")
    token_take(merchant=merchant, livemode=True, token_id=token_id, method=card)
    with pytest.raises(ValidationFailed, match="already been used"):
        token_take(merchant=merchant, livemode=True, token_id=token_id, method=card)
