"""Connector accounts' life (docs/processors.md "Connector accounts"): created with their
keys, keys rotated without downtime, revoked. The admin's pages and `manage.py
connector_account` both call these, so the same rules hold in both."""

import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from api.errors import ValidationFailed
from payments.models import Route
from processors.models import ConnectorAccount

CREDENTIALS = ("secret_key", "publishable_key", "webhook_secret")
# A rotated webhook secret keeps being accepted this long, while the processor's dashboard
# is updated: an event signed with the old one in the meantime is not lost.
WEBHOOK_SECRET_OVERLAP = datetime.timedelta(hours=24)
# What each Stripe credential starts with (restricted keys, rk_, may stand for secret keys).
STRIPE_PREFIXES = {
    "secret_key": ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
    "publishable_key": ("pk_live_", "pk_test_"),
    "webhook_secret": ("whsec_",),
}
PREFIXES = {ConnectorAccount.Processor.STRIPE: STRIPE_PREFIXES}


def key_mode(key: str) -> str | None:
    """ "live" or "test" for a Stripe API key, as its prefix says."""
    for mode in ("live", "test"):
        if f"_{mode}_" in key[:8]:
            return mode
    return None


def credential_problems(processor: str, given: dict[str, str], *, secret_key: str = "") -> dict:
    """{credential: problem} for the credentials `given` (the empty ones are not given).
    `secret_key` is the stored one when only the publishable key is replaced: both keys
    must be of the same mode, or the payer's card fields and our calls see different
    accounts."""
    problems = {}
    for name, value in given.items():
        if any(character.isspace() for character in value):
            problems[name] = "Contains white space: paste the key alone."
        elif not value.startswith(PREFIXES[processor][name]):
            expected = " or ".join(PREFIXES[processor][name])
            problems[name] = f"Not a {processor} {name.replace('_', ' ')} (starts with {expected})."
    secret, publishable = given.get("secret_key") or secret_key, given.get("publishable_key")
    if not problems and secret and publishable and key_mode(secret) != key_mode(publishable):
        problems["publishable_key"] = "Not of the secret key's mode (live and test keys mixed)."
    return problems


def refuse(problems: dict[str, str]) -> None:
    if problems:
        name, problem = next(iter(problems.items()))
        raise ValidationFailed(f"{name}: {problem}", param=name)


def given_credentials(**credentials) -> dict[str, str]:
    """The credentials actually given, stripped (a pasted key often ends with a newline)."""
    stripped = {name: (value or "").strip() for name, value in credentials.items()}
    return {name: value for name, value in stripped.items() if value}


def account_create(account: ConnectorAccount, **credentials) -> ConnectorAccount:
    """Saves `account` (processor, name, owner, api_base set) with its keys: the secret and
    publishable keys are needed; the webhook secret may come later (the processor shows it
    once the webhook URL, which names the account, is entered in its dashboard)."""
    given = given_credentials(**credentials)
    missing = [name for name in CREDENTIALS[:2] if name not in given]
    refuse({name: "Needed to create an account." for name in missing})
    refuse(credential_problems(account.processor, given))
    account.set_credentials(**given)
    account.full_clean()
    account.save()
    return account


def account_rotate(account: ConnectorAccount, **credentials) -> list[str]:
    """Replaces the credentials given, at once for every process (they read the row on each
    call). A replaced webhook secret stays valid for WEBHOOK_SECRET_OVERLAP beside the new
    one. Returns the names of the credentials replaced."""
    given = given_credentials(**credentials)
    if not given:
        raise ValidationFailed("Give at least one credential to replace.")
    if not account.active:
        raise ValidationFailed("This account is revoked: create a new one.", code="revoked")
    stored_secret = "" if "secret_key" in given else account.secret_key
    refuse(credential_problems(account.processor, given, secret_key=stored_secret))
    with transaction.atomic():
        account = ConnectorAccount.objects.select_for_update().get(pk=account.pk)
        if "webhook_secret" in given and account.webhook_secret_encrypted:
            account.previous_webhook_secret_encrypted = account.webhook_secret_encrypted
            account.previous_webhook_secret_expires_at = timezone.now() + WEBHOOK_SECRET_OVERLAP
        account.set_credentials(**given)
        account.save()
    return list(given)


def routes_naming(account: ConnectorAccount):
    return Route.objects.filter(account=account.pk).order_by("merchant_id", "method_type")


def account_revoke(account: ConnectorAccount) -> list[Route]:
    """Revokes the account for good: the routes naming it answer `no_route` from now on
    (returned, for the operator to re-point). A second revocation changes nothing."""
    if account.active:
        account.revoked_at = timezone.now()
        account.save(update_fields=["revoked_at"])
    return list(routes_naming(account))


def webhook_url(account: ConnectorAccount) -> str:
    """Where the processor sends this account's events: entered in its dashboard."""
    return f"{settings.PUBLIC_BASE_URL}/processors/{account.processor}/webhooks/{account.pk}"
