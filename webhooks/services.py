"""What the API, the admin, the operator commands, the sandbox and `events.emit()` call on
webhooks: writes on endpoints (spec "Webhook endpoints"; create and roll return the plaintext
secret, shown to the merchant once and never stored), resend and requeue, simulate-webhook's
inline delivery, and the fan-out hook of the transactions that write events.

Resend and requeue reopen the deliveries in the database, then nudge the workers. The rows are
the truth; a lost nudge is picked up by the beat tick within seconds."""

import datetime
from dataclasses import dataclass
from functools import partial

from django.db import transaction
from django.utils import timezone

from accounts.models import Merchant
from api.errors import NotFound, ProcessingFailed, not_found
from api.ids import is_id
from events.models import Event
from events.services import emit
from webhooks.attempts import deliveries_attempt_at_once
from webhooks.crypto import encrypt_secret, new_signing_secret
from webhooks.fanout import (
    deliveries_create_claimed,
    deliveries_for,
    deliveries_reopen,
    endpoints_for,
    event_deliveries_reopen,
)
from webhooks.models import Delivery, WebhookEndpoint
from webhooks.selectors import enabled_endpoints
from webhooks.tasks import enqueue_deliveries
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


def _lock_endpoint(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    # FOR NO KEY UPDATE: a transaction writing a delivery to it takes the row FOR KEY SHARE
    # (the foreign key) while it holds its merchant's row, which the change's trigger then
    # locks (webhooks/migrations/0005): FOR UPDATE here would deadlock with it.
    return WebhookEndpoint.objects.select_for_update(no_key=True).get(pk=endpoint.pk)


def endpoint_get(*, merchant: Merchant, livemode: bool, endpoint_id: str) -> WebhookEndpoint:
    """An enabled endpoint of this merchant and mode; 404 for anything else. What is not a
    `whe_` id is not looked up (a NUL byte cannot even be sent to PostgreSQL)."""
    if not is_id(endpoint_id, "whe"):
        raise not_found("webhook endpoint")
    endpoint = enabled_endpoints(merchant, livemode).filter(pk=endpoint_id).first()
    if endpoint is None:
        raise not_found("webhook endpoint")
    return endpoint


def subscribers(
    *, merchant: Merchant | str, livemode: bool, event_type: str, endpoint_id: str | None = None
) -> list[WebhookEndpoint]:
    """The `endpoint` parameter of resend and simulate-webhook: that enabled endpoint of this
    merchant and mode (else 404 naming the parameter), or all of them when None; then those
    subscribed to the type (else 422 `no_matching_endpoint`)."""
    if endpoint_id is None:
        return endpoints_for(event_type, list(enabled_endpoints(merchant, livemode)))
    try:
        endpoint = endpoint_get(merchant=merchant, livemode=livemode, endpoint_id=endpoint_id)
    except NotFound as missing:
        missing.param = "endpoint"
        raise
    return endpoints_for(event_type, [endpoint])


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
        locked = _lock_endpoint(endpoint)
        if locked.deleted_at is None:
            locked.deleted_at = now
            locked.save(update_fields=["deleted_at"])
        Delivery.objects.waiting(now).filter(endpoint=locked).update(
            status=Delivery.Status.CANCELED, next_attempt_at=None
        )
    return locked


def endpoint_roll_secret(*, endpoint: WebhookEndpoint) -> EndpointWithSecret:
    """A new secret; the one it replaces keeps signing for 24 hours (spec "Signature" 5).
    Rolling again inside those 24 hours drops the oldest secret: at most two are active."""
    secret = new_signing_secret()
    with transaction.atomic():
        locked = _lock_endpoint(endpoint)
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


def resend_event(*, event: Event, endpoint_id: str | None = None) -> list[str]:
    """Another attempt now for each endpoint subscribed to the event (or the one named, see
    `subscribers`). -> ids of the deliveries made due again."""
    endpoints = subscribers(
        merchant=event.merchant_id,
        livemode=event.livemode,
        event_type=event.type,
        endpoint_id=endpoint_id,
    )
    delivery_ids = event_deliveries_reopen(event, endpoints)
    enqueue_deliveries(delivery_ids, event.livemode)
    return delivery_ids


def requeue_dead_letters(deliveries) -> list[str]:
    delivery_ids = deliveries_reopen(list(deliveries))
    enqueue_deliveries(delivery_ids)
    return delivery_ids


def simulated_event_deliver(
    *, merchant: Merchant, event_type: str, obj: dict, endpoints: list[WebhookEndpoint]
) -> Event:
    """simulate-webhook: a real test-mode event, delivered inline to `endpoints` (see
    `subscribers`) after its commit, all at once, so the caller can show the receivers'
    answers within one attempt's time (`deliveries_attempt_at_once`)."""
    with transaction.atomic():
        # Delivered below, to the endpoints asked for: no fan-out of its own.
        event = emit(merchant=merchant, livemode=False, type=event_type, obj=obj, fan_out=False)
        deliveries = deliveries_create_claimed(event, endpoints)
    deliveries_attempt_at_once(deliveries)  # after the commit: no network call inside it
    return event


def fan_out_in_transaction(events) -> None:
    """settings.EVENT_FAN_OUT_HOOKS: the deliveries of the events just written, in the same
    transaction, and the nudges they are worth once it commits (a lost nudge is found by the
    beat tick: the delivery row stays due)."""
    for livemode in {event.livemode for event in events}:  # one mode, nearly always
        delivery_ids = deliveries_for([event for event in events if event.livemode == livemode])
        if delivery_ids:
            # robust: a broker outage after commit must not turn a committed change into a 500.
            nudge = partial(enqueue_deliveries, delivery_ids, livemode)
            transaction.on_commit(nudge, robust=True)
