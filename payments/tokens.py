"""Tokens as payments spend them: claimed once, atomically; given back when nothing was
processed."""

from django.utils import timezone

from accounts.models import Merchant
from api.errors import ValidationFailed
from payments.methods import Method
from payments.models import Token


def _token_error(message: str) -> ValidationFailed:
    return ValidationFailed(message, code="token_invalid", param="payment_method.token")


# One statement claims the token and returns it: the conditional UPDATE makes the claim
# atomic (two payments can never share a token) and RETURNING saves a round trip per payment.
_TOKEN_TAKE_SQL = (
    "UPDATE {table} SET used_at = %s WHERE id = %s AND merchant_id = %s AND livemode = %s "
    "AND used_at IS NULL AND expires_at > %s AND type = %s RETURNING *"
)


def token_take(*, merchant: Merchant, livemode: bool, token_id: str, method: Method) -> Token:
    """Mark the token used and return it, or say why it cannot be used (400 token_invalid)."""
    now = timezone.now()
    sql = _TOKEN_TAKE_SQL.format(table=Token._meta.db_table)
    params = [now, token_id, merchant.pk, livemode, now, method.token_type]
    for token in Token.objects.raw(sql, params):
        return token
    token = Token.objects.filter(pk=token_id, merchant=merchant, livemode=livemode).first()
    if token is None:
        raise _token_error(f"No such token: {token_id!r}.")
    if token.used_at is not None:
        raise _token_error("This token has already been used; tokens are single-use.")
    if token.expires_at <= now:
        raise _token_error("This token has expired; tokens are valid for 15 minutes.")
    raise _token_error(
        f"This token is of type {token.type}; payment_method.type {method.name} needs "
        f"a {method.token_type} token."
    )


def token_release(token: Token) -> None:
    """Give the token back when nothing was processed, so a retry can use it."""
    Token.objects.filter(pk=token.pk, used_at=token.used_at).update(used_at=None)


def card_of(token: Token, method: Method) -> dict:
    return {
        "brand": token.brand,
        "last4": token.last4,
        "bin": token.bin,
        "exp_month": token.exp_month,
        "exp_year": token.exp_year,
        "issuer_country": "EE",
        "funding": "credit",
        "fingerprint": token.fingerprint,
        "network_token": method.wallet is not None,  # wallets carry a device token, not a PAN
    }
