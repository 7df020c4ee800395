"""POST /v1/sandbox/tokens: the only endpoint that accepts card data."""

import datetime

import pytest

from payments.models import Token
from payments.tasks import purge_unused_tokens
from tests.payments.support import APPROVED, MASTERCARD, error_of, payment_body

CARD = {"number": APPROVED, "exp_month": 12, "exp_year": 2099, "cvc": "123"}


def tokenize(client, **body):
    return client.post("/v1/sandbox/tokens", {**CARD, **body}, format="json")


def test_publishable_key_tokenises(publishable_api):
    response = tokenize(publishable_api)
    assert response.status_code == 201
    token = response.json()
    assert token["object"] == "token" and token["type"] == "card" and token["livemode"] is False
    assert token["id"].startswith("tok_")
    assert token["card"] == {
        "brand": "visa",
        "last4": "4242",
        "bin": "424242",
        "exp_month": 12,
        "exp_year": 2099,
    }


def test_token_is_valid_15_minutes(api, time_machine):
    time_machine.move_to(datetime.datetime(2030, 5, 1, 10, 0, tzinfo=datetime.UTC), tick=False)
    token = tokenize(api).json()
    assert (token["created"], token["expires_at"]) == (
        "2030-05-01T10:00:00Z",
        "2030-05-01T10:15:00Z",
    )


@pytest.mark.parametrize(
    "number", ["4242 4242 4242 4242", "5555-5555-5555-4444", " 4242-4242 4242 4242"]
)
def test_spaces_and_dashes_are_allowed(api, number):
    assert tokenize(api, number=number).status_code == 201


def test_fingerprint_is_stable_per_card_per_merchant(api, other_api):
    first = Token.objects.get(pk=tokenize(api).json()["id"])
    second = Token.objects.get(pk=tokenize(api, number="4242 4242 4242 4242").json()["id"])
    other_card = Token.objects.get(pk=tokenize(api, number=MASTERCARD).json()["id"])
    elsewhere = Token.objects.get(pk=tokenize(other_api).json()["id"])
    assert first.fingerprint == second.fingerprint
    assert first.fingerprint not in (other_card.fingerprint, elsewhere.fingerprint)


def test_planned_outcome_is_kept(api):
    token = Token.objects.get(pk=tokenize(api, number="4000008400001629").json()["id"])
    assert token.planned_outcome == "requires_action>declined:do_not_honor"


@pytest.mark.parametrize("number", ["4111111111111111", "4242", "abcd", "4242424242424243"])
def test_numbers_outside_the_table_are_invalid_card_number(api, number):
    response = tokenize(api, number=number)
    body = error_of(response, 400, "validation_error", "invalid_card_number")
    assert body["param"] == "number" and number not in response.content.decode()


def test_past_expiry_is_card_expired(api, time_machine):
    time_machine.move_to(datetime.datetime(2030, 5, 1, tzinfo=datetime.UTC), tick=False)
    assert (
        error_of(tokenize(api, exp_year=2029), 400, "validation_error", "card_expired")["param"]
        == "exp_year"
    )
    assert (
        error_of(
            tokenize(api, exp_year=2030, exp_month=4), 400, "validation_error", "card_expired"
        )["param"]
        == "exp_month"
    )
    assert tokenize(api, exp_year=2030, exp_month=5).status_code == 201
    assert tokenize(api, exp_year=31, exp_month=1).json()["card"]["exp_year"] == 2031


@pytest.mark.parametrize(
    "change, param",
    [
        ({"cvc": "12"}, "cvc"),
        ({"cvc": "12345"}, "cvc"),
        ({"cvc": "12a"}, "cvc"),
        ({"exp_month": 13}, "exp_month"),
        ({"exp_month": 0}, "exp_month"),
        ({"type": "paypal"}, "type"),
        ({"name": "n" * 201}, "name"),
        ({"number": 4242424242424242}, "number"),
    ],
)
def test_tokenizer_validation(api, change, param):
    assert (
        error_of(tokenize(api, **change), 400, "validation_error", "invalid_parameter")["param"]
        == param
    )


@pytest.mark.parametrize("cvc", ["123", "1234"])
def test_cvc_of_three_or_four_digits(api, cvc):
    assert tokenize(api, cvc=cvc, name="Ann Example").status_code == 201


@pytest.mark.parametrize("token_type", ["apple_pay", "google_pay"])
def test_wallet_tokens(api, token_type):
    assert tokenize(api, type=token_type).json()["type"] == token_type


def test_live_keys_are_refused(live_api, live_publishable_api):
    for client in (live_api, live_publishable_api):
        error_of(tokenize(client), 403, "authorization_error", "test_mode_required")


def test_unused_tokens_are_purged_a_day_after_they_expire(api, time_machine):
    spent = tokenize(api).json()["id"]
    assert api.post("/v1/payments", payment_body(spent), format="json").status_code == 201
    unused = tokenize(api).json()["id"]
    time_machine.move_to(datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=24))
    assert purge_unused_tokens() == 0  # expired 23 h 45 min ago: kept for now
    time_machine.move_to(datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=16))
    assert purge_unused_tokens() == 1
    assert list(Token.objects.values_list("id", flat=True)) == [spent]  # stays with its payment
    assert not Token.objects.filter(pk=unused).exists()
