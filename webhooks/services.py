"""Writes on webhook endpoints (spec "Webhook endpoints"). Each returns the endpoint and, on
create and roll, the plaintext secret, which is shown to the merchant once and never stored."""

import datetime
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Merchant
from api.errors import ProcessingFailed, not_found
from api.ids import is_id
from api.revision import RevisionCache, bump
from api.rows import ModelRows
from webhooks.crypto import encrypt_secret, new_signing_secret
from webhooks.models import Delivery, WebhookEndpoint
from webhooks.urlguard import check_url

MAX_ENABLED_ENDPOINTS = 16  # per merchant and environment (spec "Limits")
PREVIOUS_SECRET_OVERLAP = datetime.timedelta(hours=24)


@dataclass(frozen=True)
class EndpointWithSecret:
    endpoint: WebhookEndpoint
    secret: str


def _lock_merchant(merchant: Merchant) -> None:
    # Serialises creates of one merchant, so two concurrent requests cannot both take the 16th
    # place.
    Merchant.objects.select_for_update().filter(pk=merchant.pk).first()


def enabled_endpoints(merchant: Merchant, livemode: bool):
    return WebhookEndpoint.objects.filter(
        merchant=merchant, livemode=livemode, deleted_at__isnull=True
    )


_ENDPOINT_ROWS = ModelRows(WebhookEndpoint)
# (merchant id, livemode) -> the rows of its enabled endpoints, as read
_endpoint_lists = RevisionCache("WEBHOOK_ENDPOINT_CACHE", max_entries=4096)


def enabled_endpoint_list(merchant_id: str, livemode: bool) -> list[WebhookEndpoint]:
    """list(enabled_endpoints(...).order_by("id")), fresh instances each call. The fan-out
    runs it in every transaction that writes an event, so the rows are kept in each process
    under the configuration revision (api/revision.py), which every endpoint change replaces
    after commit: most merchants have no endpoint, and their payments then read nothing.
    Not for a transaction that has changed endpoints itself: it would keep rows that a
    rollback undoes (nothing does that; the API changes endpoints in requests of their own)."""
    key = (merchant_id, livemode)
    revision, rows = _endpoint_lists.get(key)
    if rows is None:
        rows = _enabled_endpoint_rows(merchant_id, livemode)
        _endpoint_lists.put(key, revision, rows)
    return [_ENDPOINT_ROWS.instance(row) for row in rows]


def _enabled_endpoint_rows(merchant_id: str, livemode: bool) -> tuple:
    """By hand: the ORM would spend longer compiling it than running it."""
    sql = (
        f"SELECT {_ENDPOINT_ROWS.columns} FROM {WebhookEndpoint._meta.db_table} "
        "WHERE merchant_id = %s AND livemode = %s AND deleted_at IS NULL ORDER BY id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [merchant_id, livemode])
        return tuple(cursor.fetchall())


def endpoint_get(*, merchant: Merchant, livemode: bool, endpoint_id: str) -> WebhookEndpoint:
    """An enabled endpoint of this merchant and mode; 404 for anything else. What is not a
    `whe_` id is not looked up (a NUL byte cannot even be sent to PostgreSQL)."""
    if not is_id(endpoint_id, "whe"):
        raise not_found("webhook endpoint")
    endpoint = enabled_endpoints(merchant, livemode).filter(pk=endpoint_id).first()
    if endpoint is None:
        raise not_found("webhook endpoint")
    return endpoint


def endpoint_create(
    *,
    merchant: Merchant,
    livemode: bool,
    url: str,
    description: str | None = None,
    enabled_events: list[str] | None = None,
) -> EndpointWithSecret:
    check_url(url)  # resolves DNS: before the transaction, never inside it
    secret = new_signing_secret()
    with transaction.atomic():
        _lock_merchant(merchant)
        if enabled_endpoints(merchant, livemode).count() >= MAX_ENABLED_ENDPOINTS:
            raise ProcessingFailed(
                f"There are already {MAX_ENABLED_ENDPOINTS} enabled webhook endpoints in "
                f"{'live' if livemode else 'test'} mode; delete one first.",
                code="endpoint_limit_reached",
            )
        endpoint = WebhookEndpoint.objects.create(
            merchant=merchant,
            livemode=livemode,
            url=url,
            description=description,
            enabled_events=enabled_events or ["*"],
            secret_encrypted=encrypt_secret(secret),
            secret_last4=secret[-4:],
        )
    return EndpointWithSecret(endpoint, secret)


def endpoint_delete(*, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """Disable and hide. Its waiting deliveries are canceled; one in flight right now finishes
    and is recorded. Attempt history is kept (spec "Retries and dead letter" 5)."""
    now = timezone.now()
    with transaction.atomic():
        WebhookEndpoint.objects.filter(pk=endpoint.pk, deleted_at__isnull=True).update(
            deleted_at=now
        )
        bump()  # update() sends no post_save
        endpoint.deliveries.filter(status=Delivery.Status.PENDING).filter(
            Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)
        ).update(status=Delivery.Status.CANCELED, next_attempt_at=None)
    endpoint.refresh_from_db()
    return endpoint


def endpoint_roll_secret(*, endpoint: WebhookEndpoint) -> EndpointWithSecret:
    """A new secret; the one it replaces keeps signing for 24 hours (spec "Signature" 5).
    Rolling again inside those 24 hours drops the oldest secret: at most two are active."""
    secret = new_signing_secret()
    with transaction.atomic():
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        locked.previous_secret_encrypted = locked.secret_encrypted
        locked.previous_secret_expires_at = timezone.now() + PREVIOUS_SECRET_OVERLAP
        locked.secret_encrypted = encrypt_secret(secret)
        locked.secret_last4 = secret[-4:]
        locked.save(
            update_fields=[
                "previous_secret_encrypted",
                "previous_secret_expires_at",
                "secret_encrypted",
                "secret_last4",
            ]
        )
    return EndpointWithSecret(locked, secret)
