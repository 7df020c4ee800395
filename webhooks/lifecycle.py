"""An endpoint's automatic warning and disabling after sustained failure (the thresholds:
webhooks/streaks.py), its deliveries held while disabled, and the digest of dead letters that
replaced one email per event (docs/webhooks.md "Endpoint health and recovery").

Every action leaves a `StatusChange` row (the admin shows them on the endpoint's page) and a
WARNING log line of `webhooks.lifecycle`: the operational record."""

import datetime
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F

from accounts.models import Merchant
from infra import revision
from webhooks.emails import email_owner
from webhooks.models import (
    Delivery,
    EndpointHealth,
    HealthBucket,
    StatusChange,
    WebhookEndpoint,
)
from webhooks.streaks import DISABLE, WARN, Streak, verdict

log = logging.getLogger(__name__)
SYSTEM = "system"
DIGEST_BATCH = 500  # endpoints per digest run; the next run takes the rest
DIGEST_SAMPLE = 10  # events named in one digest


def lock_endpoint(endpoint_id: str) -> WebhookEndpoint:
    """The endpoint's row, then its merchant's (`endpoints_changing`), for a change in this
    transaction."""
    # FOR NO KEY UPDATE: a transaction writing a delivery to it takes the row FOR KEY SHARE
    # (the foreign key) while it holds its merchant's row, which this then locks: FOR UPDATE
    # here would deadlock with it.
    locked = WebhookEndpoint.objects.select_for_update(no_key=True).get(pk=endpoint_id)
    endpoints_changing(locked.merchant_id)
    return locked


def endpoints_changing(merchant_id: str) -> None:
    """Before any write to a merchant's endpoints, in its transaction (docs/webhooks.md
    "Fan-out"): takes the merchant's row FOR UPDATE, which waits for the merchant's event
    transactions in flight and holds off the next until this one ends (the fan-out takes it
    FOR KEY SHARE: `webhooks_fan_out_revision`), and changes the configuration revision, so
    every process's fan-out reads the list again once this commits (infra/revision.py)."""
    Merchant.objects.select_for_update().filter(pk=merchant_id).first()
    revision.changed()


def status_changed(endpoint: WebhookEndpoint, action: str, actor: str, detail: str) -> None:
    StatusChange.objects.create(endpoint=endpoint, action=action, actor=actor, detail=detail)
    log.warning("webhook endpoint %s %s by %s: %s", endpoint.id, action, actor, detail)


def after_failure(endpoint: WebhookEndpoint, streak: Streak, now: datetime.datetime) -> None:
    """The delivery path, after recording a failed attempt: warn or disable if it is time."""
    decision = verdict(streak, now)
    if decision == WARN:
        endpoint_warn(endpoint, streak, now)
    elif decision == DISABLE:
        endpoint_disable(endpoint, streak, now)


def endpoint_warn(endpoint: WebhookEndpoint, streak: Streak, now) -> bool:
    """One warning per streak: claimed by a conditional update, so of workers failing at once
    only one sends it."""
    claimed = EndpointHealth.objects.filter(endpoint=endpoint, warned_at__isnull=True).update(
        warned_at=now
    )
    if not claimed:
        return False
    health = EndpointHealth.objects.get(endpoint=endpoint)
    detail = _streak_text(streak)
    status_changed(endpoint, StatusChange.Action.WARNED, SYSTEM, detail)
    notice = settings.WEBHOOK_HEALTH_DISABLE_AFTER - settings.WEBHOOK_HEALTH_WARN_AFTER
    email_owner(
        endpoint,
        "failing",
        failing_for=_days(now - streak.failing_since),
        failing_since=streak.failing_since,
        failures=streak.consecutive_failures,
        last_failure_at=health.last_failure_at,
        last_error=health.last_failure_error,
        disable_at=max(streak.failing_since + settings.WEBHOOK_HEALTH_DISABLE_AFTER, now + notice),
    )
    return True


def _streak_text(streak: Streak) -> str:
    return (
        f"{streak.consecutive_failures} failures in a row since "
        f"{streak.failing_since:%Y-%m-%d %H:%M} UTC"
    )


def _days(span: datetime.timedelta) -> str:
    hours = int(span.total_seconds() // 3600)
    return f"{hours // 24} days and {hours % 24} hours" if hours >= 24 else f"{hours} hours"


def endpoint_disable(endpoint: WebhookEndpoint, streak: Streak, now) -> bool:
    """Disable it after sustained failure; then the email. False when it was already disabled
    or deleted."""
    locked = _disabled(endpoint, now, _streak_text(streak))
    if locked is None:
        return False
    email_owner(
        locked,
        "disabled",
        failing_since=streak.failing_since,
        failures=streak.consecutive_failures,
    )
    return True


def endpoint_gone(endpoint: WebhookEndpoint, event_id: str, now) -> bool:
    """Its receiver answered 410 Gone: disabled at once, not after days of retries (a 410
    says the URL is gone for good); then the owner's email. False when already disabled."""
    locked = _disabled(endpoint, now, f"the receiver answered 410 Gone to {event_id}")
    if locked is None:
        return False
    email_owner(locked, "gone", event_id=event_id, at=now)
    return True


def _disabled(endpoint: WebhookEndpoint, now, why: str) -> WebhookEndpoint | None:
    """Disable it (still listed, status `disabled`) and hold its waiting deliveries, recorded
    with `why`, in one transaction. None when it was already disabled or deleted."""
    with transaction.atomic():
        locked = lock_endpoint(endpoint.id)
        if locked.deleted_at is not None or locked.disabled_at is not None:
            return None
        locked.disabled_at = now
        locked.save(update_fields=["disabled_at"])
        held = deliveries_hold(locked, now)
        status_changed(
            locked, StatusChange.Action.DISABLED, SYSTEM, f"{why}; {held} waiting deliveries held"
        )
    return locked


def deliveries_hold(endpoint: WebhookEndpoint, now) -> int:
    """Its waiting deliveries stop being due (status `held`); one in flight finishes, and is
    held when its retry comes round (webhooks.attempts)."""
    return (
        Delivery.objects.waiting(now)
        .filter(endpoint=endpoint)
        .update(status=Delivery.Status.HELD, next_attempt_at=None, enqueued_until=None)
    )


def health_reset(endpoint: WebhookEndpoint) -> None:
    """Re-enabling starts a new streak: no failures, no warning, no slices counted."""
    EndpointHealth.objects.filter(endpoint=endpoint).update(
        consecutive_failures=0, failing_since=None, warned_at=None
    )
    HealthBucket.objects.filter(endpoint=endpoint).delete()


def dead_letter_digests_send(now) -> int:
    """Beat, every WEBHOOK_DEAD_LETTER_DIGEST_PERIOD: one email per endpoint with dead letters
    since its last digest. -> how many were sent."""
    due = EndpointHealth.objects.filter(undigested_dead_letters__gt=0).select_related(
        "endpoint__merchant"
    )
    return sum(_digest_send(health, now) for health in due[:DIGEST_BATCH])


def _digest_send(health: EndpointHealth, now) -> bool:
    """Claimed by the previous digest's time (a second run at once finds it changed); the
    count is taken off, not zeroed, so dead letters recorded meanwhile wait for the next."""
    count = health.undigested_dead_letters
    claimed = EndpointHealth.objects.filter(
        pk=health.pk, digested_at=health.digested_at, undigested_dead_letters__gte=count
    ).update(undigested_dead_letters=F("undigested_dead_letters") - count, digested_at=now)
    if not claimed or health.endpoint.deleted_at is not None:
        return False
    recent = (
        Delivery.objects.filter(endpoint=health.endpoint, status=Delivery.Status.DEAD_LETTERED)
        .select_related("event")
        .order_by("-event_id")[:DIGEST_SAMPLE]
    )
    return email_owner(
        health.endpoint,
        "dead_letters",
        count=count,
        since=health.digested_at,
        events=[delivery.event for delivery in recent],
    )
