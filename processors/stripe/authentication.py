"""The page a payer is sent to when Stripe asks for 3-D Secure (a payment's
`next_action.redirect.url`): it completes Stripe's authentication in the payer's browser with
Stripe.js, then comes back to us; we ask Stripe and send the payer to the merchant's
`return_url` (docs/processors.md "3-D Secure")."""

from django.conf import settings
from django.core import signing

SALT = "processors.stripe.authentication"


def authentication_url(payment_id: str) -> str:
    """An unguessable address for one payment's authentication (the payment id, signed)."""
    signed = signing.dumps(payment_id, salt=SALT)
    return f"{settings.PUBLIC_BASE_URL}/processors/stripe/authenticate/{signed}"
