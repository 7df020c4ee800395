"""Writes of the sandbox: the tokenizer and the challenge page's decisions."""

import datetime
import re

from django.utils import timezone
from django.utils.crypto import salted_hmac

from accounts.models import Merchant
from api.errors import NotFound, ValidationFailed
from infra.retention import purge_rows
from payments.models import Payment, Token
from payments.services import payment_complete_action
from payments.tokens import TOKEN_LIFETIME
from sandbox.cards import CARDS_BY_NUMBER
from sandbox.models import ChallengeSession

_SEPARATORS = re.compile(r"[ -]")


def card_fingerprint(*, merchant: Merchant, number: str) -> str:
    """Keyed hash: stable for one card number at one merchant, useless anywhere else."""
    return salted_hmac(
        "sandbox.card-fingerprint", f"{merchant.id}:{number}", algorithm="sha256"
    ).hexdigest()[:32]


def _check_expiry(exp_month: int, exp_year: int, now: datetime.datetime) -> None:
    if (exp_year, exp_month) < (now.year, now.month):
        param = "exp_month" if exp_year == now.year else "exp_year"
        raise ValidationFailed(
            "The card's expiry date is in the past.", code="card_expired", param=param
        )


def token_create(
    *,
    merchant: Merchant,
    livemode: bool,
    type: str,
    number: str,
    exp_month: int,
    exp_year: int,
) -> Token:
    """Tokenise a magic test card. The number and the security code are never stored: only
    brand, BIN, last four, expiry, a fingerprint and the outcome the card is planned to give.
    """
    digits = _SEPARATORS.sub("", number)
    card = CARDS_BY_NUMBER.get(digits)
    if card is None:
        # Never echo the number back: it may be a real card typed by mistake.
        raise ValidationFailed(
            "This is not a test card number; GET /v1/sandbox/test-cards lists the nine.",
            code="invalid_card_number",
            param="number",
        )
    now = timezone.now()
    _check_expiry(exp_month, exp_year, now)
    return Token.objects.create(
        merchant=merchant,
        livemode=livemode,
        type=type,
        brand=card.brand,
        last4=digits[-4:],
        bin=digits[:6],
        exp_month=exp_month,
        exp_year=exp_year,
        fingerprint=card_fingerprint(merchant=merchant, number=digits),
        planned_outcome=card.plan,
        created=now,
        expires_at=now + TOKEN_LIFETIME,
    )


# What `secrets.token_urlsafe` makes (sandbox.models.new_session_id); anything else names no
# session and is not looked up (a NUL byte cannot even be sent to PostgreSQL).
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


# A challenge is useful for its payment's hour in requires_action; a day on it is deleted.
CHALLENGE_RETENTION = datetime.timedelta(days=1)


def challenge_sessions_purge() -> int:
    """Deletes challenge sessions opened over CHALLENGE_RETENTION ago; returns how many."""
    cutoff = timezone.now() - CHALLENGE_RETENTION
    return purge_rows(ChallengeSession.objects.filter(created__lte=cutoff), order="created")


def _unused_sessions(session_id: str):
    if not _SESSION_ID.fullmatch(session_id):
        raise NotFound("This challenge does not exist or has already been answered.")
    return ChallengeSession.objects.filter(pk=session_id, used_at__isnull=True)


def challenge_open(*, session_id: str) -> tuple[ChallengeSession, Payment]:
    """The unused session and its payment, or NotFound."""
    session = _unused_sessions(session_id).first()
    if session is None:
        raise NotFound("This challenge does not exist or has already been answered.")
    return session, Payment.objects.select_related("merchant").get(pk=session.payment_id)


def challenge_answer(*, session_id: str, action: str) -> Payment:
    """Approve, Decline or Timeout, once: the session is spent first (a conditional UPDATE,
    so two answers cannot both pass), then the payer action asks the connector with no
    transaction open (docs/payments.md "Connector operations")."""
    spent = _unused_sessions(session_id).update(used_at=timezone.now())
    if not spent:
        raise NotFound("This challenge does not exist or has already been answered.")
    session = ChallengeSession.objects.get(pk=session_id)
    payment = Payment.objects.get(pk=session.payment_id)
    return payment_complete_action(payment=payment, details={"challenge_result": action})
