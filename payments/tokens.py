"""Tokens as payments spend them: claimed once, atomically; given back when nothing was
processed."""

import datetime
import functools

from django.db import connection
from django.utils import timezone

from accounts.models import Merchant
from api.errors import ValidationFailed, quoted
from infra.retention import purge_rows
from infra.rows import Columns, ModelRows
from payments.methods import Method
from payments.models import Token


def _token_error(message: str) -> ValidationFailed:
    return ValidationFailed(message, code="token_invalid", param="payment_method.token")


_TOKEN_ROWS = ModelRows(Token)


@functools.cache
def _take_sql() -> str:
    t = Columns(Token)
    return (
        f"UPDATE {t.table} SET {t.used_at} = %(now)s WHERE {t.id} = %(id)s "
        f"AND {t.merchant} = %(merchant_id)s AND {t.livemode} = %(livemode)s "
        f"AND {t.used_at} IS NULL AND {t.expires_at} > %(now)s AND {t.type} = %(type)s "
        f"RETURNING {_TOKEN_ROWS.columns}"
    )


def _take_if_usable(**params) -> Token | None:
    """One statement claims the token and returns it: the conditional UPDATE makes the claim
    atomic (two payments can never share a token) and RETURNING saves a round trip."""
    with connection.cursor() as cursor:
        cursor.execute(_take_sql(), params)
        row = cursor.fetchone()
    return _TOKEN_ROWS.instance(row) if row else None


def token_take(*, merchant: Merchant, livemode: bool, token_id: str, method: Method) -> Token:
    """Mark the token used and return it, or say why it cannot be used (400 token_invalid)."""
    now = timezone.now()
    token = _take_if_usable(
        # Adapted as the ORM would (SQLite stores and compares timestamps as text).
        now=Token._meta.get_field("used_at").get_db_prep_value(now, connection),
        id=token_id,
        merchant_id=merchant.pk,
        livemode=livemode,
        type=method.token_type,
    )
    if token is not None:
        return token
    token = Token.objects.filter(pk=token_id, merchant=merchant, livemode=livemode).first()
    if token is None:
        raise _token_error(f"No such token: {quoted(token_id)}.")
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


# Tokens are made from browsers with a publishable key, and abandoned checkouts leave them
# unused: a day after they expired they are deleted. A spent token stays with its payment.
UNUSED_TOKEN_RETENTION = datetime.timedelta(days=1)


def tokens_purge_unused() -> int:
    """Deletes tokens that expired unused over UNUSED_TOKEN_RETENTION ago; returns how many."""
    cutoff = timezone.now() - UNUSED_TOKEN_RETENTION
    return purge_rows(
        Token.objects.filter(used_at__isnull=True, expires_at__lte=cutoff), order="expires_at"
    )
