"""The card behind a Stripe payment-method reference, as the token exchange keeps it
(docs/processors.md "Hosted fields and live tokens"): what Stripe.js made in the payer's
browser (a PaymentMethod `pm_`, or a Token `tok_` from `createToken`), asked of Stripe with
the account's secret key. Stripe never gives the number, nor its first six digits."""

from dataclasses import dataclass

import stripe

from api.errors import ValidationFailed, quoted
from processors.models import ConnectorAccount
from processors.stripe.client import call, stripe_client
from processors.stripe.outcome import get_path

# A Token's card names its brand as people write it; a PaymentMethod's as our catalogue does.
_TOKEN_BRANDS = {
    "American Express": "amex",
    "Diners Club": "diners",
    "Discover": "discover",
    "JCB": "jcb",
    "MasterCard": "mastercard",
    "UnionPay": "unionpay",
    "Visa": "visa",
}
PARAM = "processor_reference"


@dataclass(frozen=True)
class StripeCard:
    reference: str  # what a PaymentIntent's payment_method names: the pm_ or the card_ id
    brand: str
    last4: str
    exp_month: int
    exp_year: int
    fingerprint: str


def stripe_card(account: ConnectorAccount, reference: str) -> StripeCard:
    """The card a `pm_` or `tok_` of `account` stands for; 400 `token_invalid` when Stripe
    knows no such card there, 502 `connector_http_error` when Stripe cannot be asked
    (processors.stripe.client.call)."""
    client = stripe_client(account)
    try:
        if reference.startswith("pm_"):
            method = call(client.v1.payment_methods.retrieve, reference)
            return _card(method["id"], method.get("card"), brand=get_path(method, "card", "brand"))
        if reference.startswith("tok_"):
            card = call(client.v1.tokens.retrieve, reference).get("card")
            brand = _TOKEN_BRANDS.get(get_path(card, "brand"), "unknown")
            return _card(get_path(card, "id"), card, brand=brand)
    except stripe.InvalidRequestError as exc:
        raise _unknown(reference) from exc
    raise _unknown(reference)


def _card(reference: str, card, *, brand: str) -> StripeCard:
    if card is None:
        raise _unknown(reference)
    return StripeCard(
        reference=reference,
        brand=brand.lower(),
        last4=card["last4"],
        exp_month=int(card["exp_month"]),
        exp_year=int(card["exp_year"]),
        fingerprint=card.get("fingerprint") or "",
    )


def _unknown(reference: str) -> ValidationFailed:
    return ValidationFailed(
        f"Stripe knows no card payment method {quoted(reference)} on this account: send the "
        "`pm_` or `tok_` id Stripe.js gave the payer's browser.",
        code="token_invalid",
        param=PARAM,
    )
