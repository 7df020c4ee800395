"""Live tokens (docs/processors.md "Hosted fields and live tokens"): the processor's
payment-method reference, made by its own fields in the payer's browser, exchanged for one
of our single-use `tok_` tokens. The card's number never reaches us: only what the processor
tells us of it (brand, last four, expiry, fingerprint)."""

from django.db import transaction
from django.utils import timezone

from accounts.models import Merchant
from api.errors import ValidationFailed
from payments.models import Token
from payments.tokens import TOKEN_LIFETIME
from processors.accounts import routed_account
from processors.objects import Kind, link, linked
from processors.stripe.cards import PARAM, StripeCard, stripe_card


def live_token_exchange(*, merchant: Merchant, currency: str, reference: str) -> Token:
    """A live `tok_` for the card behind the Stripe reference, linked to it; each reference
    is exchanged once (a second token could not be linked to it)."""
    account = routed_account(merchant_id=merchant.pk, method_type="card", currency=currency)
    card = stripe_card(account, reference)
    with transaction.atomic():
        token = _live_token(merchant, card)
        link(Kind.TOKEN, token.id, account, card.reference)
        if linked(Kind.TOKEN, token.id) is None:  # the reference is another token's already
            raise ValidationFailed(
                "This payment method has already been exchanged for a token; make a new one "
                "in the payer's browser.",
                code="token_invalid",
                param=PARAM,
            )
    return token


def _live_token(merchant: Merchant, card: StripeCard) -> Token:
    now = timezone.now()
    return Token.objects.create(
        merchant=merchant,
        livemode=True,
        type=Token.Type.CARD,
        brand=card.brand,
        last4=card.last4,
        bin="",  # Stripe does not tell it
        exp_month=card.exp_month,
        exp_year=card.exp_year,
        fingerprint=card.fingerprint,
        planned_outcome="",  # the processor decides
        created=now,
        expires_at=now + TOKEN_LIFETIME,
    )
