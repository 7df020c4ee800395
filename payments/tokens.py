"""Tokens as payments spend them: claimed once, atomically; given back when nothing was
processed."""

import datetime
import functools
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from accounts.models import Merchant
from api.errors import ValidationFailed, quoted
from infra.keyed import by_key, keyed_cursor
from infra.retention import purge_rows
from infra.rows import Columns, ModelRows
from payments.methods import Method
from payments.models import Token

TOKEN_LIFETIME = datetime.timedelta(minutes=15)  # spec "Limits": token validity


def _token_error(message: str) -> ValidationFailed:
    return ValidationFailed(message, code="token_invalid", param="payment_method.token")


_TOKEN_ROWS = ModelRows(Token)


@functools.cache
def _take_sql(after: str | None) -> str:
    """The conditional UPDATE that claims a usable token and returns it: atomic (two payments
    can never share a token), and RETURNING saves a round trip. `after`: the name of a WITH
    part that must have returned a row for the token to be taken (the request's claim still
    held: payments.runner.operation_start_taking)."""
    t = Columns(Token)
    fence = f" AND EXISTS (SELECT FROM {after})" if after else ""
    usable = (f"{t.merchant} = %s", f"{t.livemode} = %s", f"{t.used_at} IS NULL",
              f"{t.expires_at} > %s", f"{t.type} = %s")  # fmt: skip
    return (
        f"UPDATE {t.table} SET {t.used_at} = %s WHERE {by_key(t.id, *usable)}{fence} "
        f"RETURNING {_TOKEN_ROWS.columns}"
    )


@dataclass(frozen=True)
class TokenTake:
    """What a payment asks of a token: this one, of the method's type, the merchant's and
    usable now."""

    merchant: Merchant
    livemode: bool
    token_id: str
    method: Method
    now: datetime.datetime

    def statement(self, after: str | None = None) -> tuple[str, list]:
        """-> (sql, params) of the UPDATE ... RETURNING that takes it (see _take_sql)."""
        # Adapted as the ORM would (SQLite stores and compares timestamps as text).
        now = Token._meta.get_field("used_at").get_db_prep_value(self.now, connection)
        params = [now, self.token_id, self.merchant.pk, self.livemode, now]
        return _take_sql(after), [*params, self.method.token_type]

    def token(self, row, start: int = 0) -> Token:
        """The token from the columns the statement returned (from `start` in `row`)."""
        return _TOKEN_ROWS.instance(row, start)

    def refusal(self) -> ValidationFailed:
        """Why the statement took nothing (400 token_invalid)."""
        token = Token.objects.filter(
            pk=self.token_id, merchant=self.merchant, livemode=self.livemode
        ).first()
        if token is None:
            return _token_error(f"No such token: {quoted(self.token_id)}.")
        if token.used_at is not None:
            return _token_error("This token has already been used; tokens are single-use.")
        if token.expires_at <= self.now:
            return _token_error("This token has expired; tokens are valid for 15 minutes.")
        return _token_error(
            f"This token is of type {token.type}; payment_method.type {self.method.name} needs "
            f"a {self.method.token_type} token."
        )


def token_take(*, merchant: Merchant, livemode: bool, token_id: str, method: Method) -> Token:
    """Mark the token used and return it, or say why it cannot be used (400 token_invalid)."""
    take = TokenTake(merchant, livemode, token_id, method, timezone.now())
    with keyed_cursor() as cursor:
        cursor.execute(*take.statement())
        row = cursor.fetchone()
    if row is None:
        raise take.refusal()
    return take.token(row)


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
