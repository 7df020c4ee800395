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
from django.db.models import OuterRef, Subquery
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
from webhooks.lifecycle import (
    deliveries_hold,
    endpoints_changing,
    health_reset,
    lock_endpoint,
    status_changed,
)
from webhooks.models import Delivery, StatusChange, WebhookEndpoint
from webhooks.ordering import blocked_release_all
from webhooks.selectors import (
    enabled_endpoints,
    endpoints_of,
    fan_out_lock_read,
    fan_out_nothing_guard,
)
from webhooks.tasks import enqueue_deliveries
from webhooks.urlguard import check_url

MAX_ENABLED_ENDPOINTS = 16  # per merchant and environment (spec "Limits")
PREVIOUS_SECRET_OVERLAP = datetime.timedelta(hours=24)


@dataclass(frozen=True)
class EndpointWithSecret:
    endpoint: WebhookEndpoint
    secret: str


def _lock_endpoint(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    return lock_endpoint(endpoint.pk)


def _check_room(merchant: Merchant, livemode: bool) -> None:
    """Under the merchant's lock: 422 when the mode already has its 16 enabled endpoints."""
    if enabled_endpoints(merchant, livemode).count() >= MAX_ENABLED_ENDPOINTS:
        raise ProcessingFailed(
            f"There are already {MAX_ENABLED_ENDPOINTS} enabled webhook endpoints in "
            f"{'live' if livemode else 'test'} mode; delete one first.",
            code="endpoint_limit_reached",
        )


def endpoint_get(*, merchant: Merchant, livemode: bool, endpoint_id: str) -> WebhookEndpoint:
    """An endpoint of this merchant and mode, enabled or disabled for failure; 404 for
    anything else (deleted ones too). What is not a `whe_` id is not looked up (a NUL byte
    cannot even be sent to PostgreSQL)."""
    if not is_id(endpoint_id, "whe"):
        raise not_found("webhook endpoint")
    endpoint = endpoints_of(merchant, livemode).filter(pk=endpoint_id).first()
    if endpoint is None:
        raise not_found("webhook endpoint")
    return endpoint


def refuse_disabled(endpoint: WebhookEndpoint, param: str | None = None) -> WebhookEndpoint:
    """422 `endpoint_disabled` for an endpoint disabled after sustained failure: it is sent
    nothing until re-enabled."""
    if endpoint.disabled_at is not None:
        raise ProcessingFailed(
            f"Webhook endpoint {endpoint.id} is disabled after sustained failure; re-enable it "
            f"with POST /v1/webhook-endpoints/{endpoint.id}/enable first.",
            code="endpoint_disabled",
            param=param,
        )
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
    return endpoints_for(event_type, [refuse_disabled(endpoint, "endpoint")])


def endpoint_create(
    *,
    merchant: Merchant,
    livemode: bool,
    url: str,
    description: str | None = None,
    enabled_events: list[str] | None = None,
    ordered_delivery: bool = False,
) -> EndpointWithSecret:
    check_url(url)  # resolves DNS: before the transaction, never inside it
    secret = new_signing_secret()
    with transaction.atomic():
        endpoints_changing(merchant.pk)  # also serialises creates: one 16th place
        _check_room(merchant, livemode)
        endpoint = WebhookEndpoint.objects.create(
            merchant=merchant,
            livemode=livemode,
            url=url,
            description=description,
            enabled_events=enabled_events or ["*"],
            ordered_delivery=ordered_delivery,
            secret_encrypted=encrypt_secret(secret),
            secret_last4=secret[-4:],
        )
    return EndpointWithSecret(endpoint, secret)


def endpoint_delete(*, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """Disable and hide. Its waiting (held, blocked) deliveries are canceled; one in flight right
    now finishes and is recorded. Attempt history is kept (spec "Retries and dead letter" 5)."""
    now = timezone.now()
    with transaction.atomic():
        locked = _lock_endpoint(endpoint)
        if locked.deleted_at is None:
            locked.deleted_at = now
            locked.save(update_fields=["deleted_at"])
        kept = Delivery.objects.filter(
            endpoint=locked, status__in=[Delivery.Status.HELD, Delivery.Status.BLOCKED]
        )
        (Delivery.objects.waiting(now).filter(endpoint=locked) | kept).update(
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


def endpoint_enable(*, endpoint: WebhookEndpoint, actor: str) -> WebhookEndpoint:
    """Re-enable an endpoint disabled after sustained failure or a 410 (a no-op for an
    enabled one): its health counters start again, and its held deliveries are due again
    (`held_release`) unless it is also paused. 422 `endpoint_limit_reached` when 16 others
    are enabled meanwhile."""
    with transaction.atomic():
        endpoints_changing(endpoint.merchant_id)  # first, as creates: one 16th place
        locked = _lock_endpoint(endpoint)
        if locked.disabled_at is None:
            return locked
        _check_room(locked.merchant, locked.livemode)
        locked.disabled_at = None
        locked.save(update_fields=["disabled_at"])
        health_reset(locked)
        detail = "still paused" if locked.paused_at else held_release(locked)
        status_changed(locked, StatusChange.Action.ENABLED, actor, detail)
    return locked


def endpoint_pause(*, endpoint: WebhookEndpoint, actor: str) -> WebhookEndpoint:
    """Pause (a no-op for a paused one): its waiting deliveries are held and new events'
    deliveries are written held, so nothing is attempted and no failure is counted until
    it is resumed. 422 `endpoint_disabled` for a disabled one (it is sent nothing already)."""
    refuse_disabled(endpoint)
    now = timezone.now()
    with transaction.atomic():
        locked = _lock_endpoint(endpoint)
        if locked.paused_at is not None:
            return locked
        locked.paused_at = now
        locked.save(update_fields=["paused_at"])
        held = deliveries_hold(locked, now)
        status_changed(locked, StatusChange.Action.PAUSED, actor, f"{held} waiting deliveries held")
    return locked


def endpoint_resume(*, endpoint: WebhookEndpoint, actor: str) -> WebhookEndpoint:
    """Resume a paused endpoint (a no-op for one not paused): its backlog is due again,
    oldest first (`held_release`), unless it was disabled meanwhile."""
    with transaction.atomic():
        locked = _lock_endpoint(endpoint)
        if locked.paused_at is None:
            return locked
        locked.paused_at = None
        locked.save(update_fields=["paused_at"])
        detail = "still disabled" if locked.disabled_at else held_release(locked)
        status_changed(locked, StatusChange.Action.RESUMED, actor, detail)
    return locked


def held_release(endpoint: WebhookEndpoint) -> str:
    """In the caller's transaction: the endpoint's held deliveries are due again, oldest event
    first (each due from its event's creation, and claims take the earliest due); a failing
    one is retried within its event's retry window, as any. -> what was done, for the record.
    The beat tick nudges them within a second, as many as the endpoint has places."""
    created = Event.objects.filter(pk=OuterRef("event_id")).values("created")
    due = Delivery.objects.filter(endpoint=endpoint, status=Delivery.Status.HELD).update(
        status=Delivery.Status.PENDING, next_attempt_at=Subquery(created), enqueued_until=None
    )
    return f"{due} held deliveries due again"


def endpoint_update(*, endpoint: WebhookEndpoint, actor: str, **changes) -> WebhookEndpoint:
    """POST /v1/webhook-endpoints/:id: the fields given among `url` (through the URL guard,
    as at creation), `description`, `enabled_events` and `ordered_delivery`; the others are
    kept. Events already fanned out keep their deliveries; the next ones follow the new
    settings. Switching ordering off lets its blocked deliveries go now."""
    if "url" in changes:
        check_url(changes["url"])  # resolves DNS: before the transaction, never inside it
    with transaction.atomic():
        locked = _lock_endpoint(endpoint)
        changed = [name for name, value in changes.items() if getattr(locked, name) != value]
        if not changed:
            return locked
        for name in changed:
            setattr(locked, name, changes[name])
        locked.save(update_fields=changed)
        if not locked.ordered_delivery:
            blocked_release_all(locked)
        status_changed(locked, StatusChange.Action.UPDATED, actor, _changes_text(locked, changed))
    return locked


def _changes_text(endpoint: WebhookEndpoint, changed: list[str]) -> str:
    return "; ".join(f"{name} = {getattr(endpoint, name)!r}" for name in changed)


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
        event.refresh_from_db(fields=["resource_version"])  # the database numbered it: sent
        deliveries = deliveries_create_claimed(event, endpoints)
    deliveries_attempt_at_once(deliveries)  # after the commit: no network call inside it
    return event


def fan_out_in_transaction(events, read=None) -> None:
    """settings.EVENT_FAN_OUT_HOOKS: the deliveries of the events just written, in the same
    transaction, and the nudges they are worth once it commits (a lost nudge is found by the
    beat tick: the delivery row stays due). `read`: the value of its `read` statement
    (fan_out_lock_read) when the events' writer ran it in its own."""
    for livemode in {event.livemode for event in events}:  # one mode, nearly always
        of_mode = [event for event in events if event.livemode == livemode]
        delivery_ids = deliveries_for(of_mode, locked=read)
        if delivery_ids:
            # robust: a broker outage after commit must not turn a committed change into a 500.
            nudge = partial(enqueue_deliveries, delivery_ids, livemode)
            transaction.on_commit(nudge, robust=True)


fan_out_in_transaction.read = fan_out_lock_read  # events.services.fan_out_read
fan_out_in_transaction.guard = fan_out_nothing_guard  # events.services.fan_out_guard
