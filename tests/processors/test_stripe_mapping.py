"""Stripe's words onto the spec's, table by table (no emulator: localstripe answers every
decline as `card_declined` and reports no checks, so the tables are proven here)."""

import pytest

from payments.declines import DECLINES
from processors.stripe.declines import STRIPE_DECLINES, decline_of
from processors.stripe.outcome import avs_result, card_facts, card_outcome


def test_every_stripe_code_names_a_decline_of_the_spec():
    assert set(STRIPE_DECLINES.values()) <= set(DECLINES)


@pytest.mark.parametrize(
    ("error", "code", "soft"),
    [
        (
            {"code": "card_declined", "decline_code": "insufficient_funds"},
            "insufficient_funds",
            True,
        ),
        ({"code": "card_declined", "decline_code": "stolen_card"}, "stolen_card", False),
        (
            {"code": "card_declined", "decline_code": "issuer_not_available"},
            "issuer_unavailable",
            True,
        ),
        ({"code": "expired_card"}, "expired_card", False),
        ({"code": "incorrect_cvc"}, "incorrect_cvc", False),
        ({"code": "payment_intent_authentication_failure"}, "sca_required", True),
        ({"code": "card_declined", "decline_code": "something_new"}, "generic_decline", False),
        (None, "generic_decline", False),
    ],
)
def test_a_stripe_error_is_the_spec_decline(error, code, soft):
    decline = decline_of(error)
    assert (decline.code, decline.soft) == (code, soft)


@pytest.mark.parametrize(
    ("line", "postal", "letter"),
    [
        ("pass", "pass", "Y"),
        ("pass", "fail", "A"),
        ("fail", "pass", "Z"),
        ("fail", "fail", "N"),
        ("unavailable", "unchecked", "U"),
        (None, None, None),
    ],
)
def test_address_checks_are_one_avs_letter(line, postal, letter):
    assert avs_result({"address_line1_check": line, "address_postal_code_check": postal}) == letter


def test_a_charge_card_gives_method_card_and_outcome():
    card = {
        "brand": "mastercard",
        "last4": "4444",
        "exp_month": 3,
        "exp_year": 2031,
        "country": "DE",
        "funding": "debit",
        "fingerprint": "fp123",
        "checks": {
            "cvc_check": "fail",
            "address_line1_check": "pass",
            "address_postal_code_check": "pass",
        },
        "three_d_secure": {
            "result": "authenticated",
            "version": "2.2.0",
            "electronic_commerce_indicator": "02",
        },
    }
    charge = {"outcome": {"risk_score": 64, "risk_level": "elevated"}}

    assert card_facts(card) == {
        "brand": "mastercard",
        "last4": "4444",
        "exp_month": 3,
        "exp_year": 2031,
        "issuer_country": "DE",
        "funding": "debit",
        "fingerprint": "fp123",
    }
    assert card_outcome(charge, card) == {
        "avs_result": "Y",
        "cvv_result": "N",
        "three_ds": {"status": "authenticated", "eci": "02", "version": "2.2.0"},
        "risk_score": 64,
        "risk_decision": "review",
    }
