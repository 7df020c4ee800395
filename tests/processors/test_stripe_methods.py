"""What the Stripe connector serves, exactly (docs/processors.md "Alternative methods"):
cards in the currencies whose minor units are Stripe's too, and no other method of the
catalogue, since none can be proven against the emulator; a live route asking for more is
refused on save. The last test checks the emulator still lacks what a SEPA debit needs: when
a localstripe upgrade makes it fail, the decision is to be taken again."""

from io import StringIO

import pytest
import stripe
from django.core.management import CommandError, call_command

from api.currencies import CURRENCY_EXPONENTS
from payments.methods import METHODS
from processors.stripe.client import stripe_client
from processors.stripe.connector import StripeConnector

SERVED = {
    (method.name, currency)
    for method in METHODS.values()
    for currency in CURRENCY_EXPONENTS
    if method.serves(currency) and StripeConnector().supports(method=method, currency=currency)
}


def test_cards_only():
    assert {name for name, _ in SERVED} == {"card"}


@pytest.mark.parametrize(
    ("currency", "served"),
    [("eur", True), ("usd", True), ("jpy", True), ("isk", False), ("ugx", False), ("kwd", False)],
)
def test_card_currencies_with_stripes_minor_units(currency, served):
    assert (("card", currency) in SERVED) is served


@pytest.mark.parametrize("method", ["sepa_debit", "ideal", "paypal", "apple_pay", "klarna"])
def test_a_route_to_stripe_for_another_method_is_refused(make_account, merchant, method):
    currency = sorted(METHODS[method].currencies or ["eur"])[0]
    args = ["set", "--merchant", merchant.pk, "--method", method, "--currency", currency]
    args += ["--connector", "stripe", "--account", make_account(merchant).pk]
    with pytest.raises(CommandError, match=f"stripe does not serve {method} in {currency}"):
        call_command("route", *args, stdout=StringIO())


def test_a_card_route_in_a_currency_stripe_counts_otherwise_is_refused(make_account, merchant):
    args = ["set", "--merchant", merchant.pk, "--method", "card", "--currency", "isk"]
    args += ["--connector", "stripe", "--account", make_account(merchant).pk]
    with pytest.raises(CommandError, match="stripe does not serve card in isk"):
        call_command("route", *args, stdout=StringIO())


def test_the_emulator_still_cannot_prove_a_sepa_debit(stripe_account):
    """Stripe confirms a SEPA PaymentIntent only with the payer's mandate (`mandate_data`, or
    Stripe.js confirming it with the payment method); localstripe refuses both ways."""
    client = stripe_client(stripe_account)
    iban = {"type": "sepa_debit", "sepa_debit": {"iban": "DE89370400440532013000"}}
    method = client.v1.payment_methods.create(params=iban)
    intent = client.v1.payment_intents.create(
        params={"amount": 1000, "currency": "eur", "payment_method_types": ["sepa_debit"]}
    )
    mandate = {"customer_acceptance": {"type": "online", "online": {"ip_address": "192.0.2.1"}}}
    with pytest.raises(stripe.InvalidRequestError, match="Unexpected mandate_data"):
        client.v1.payment_intents.confirm(
            intent.id, params={"payment_method": method.id, "mandate_data": mandate}
        )
    with pytest.raises(stripe.APIError, match="Not implemented"):
        client.v1.payment_intents.confirm(intent.id, params={"payment_method": method.id})
