"""Attempts: one POST of a claimed delivery, its record, the retry schedule and the dead
letter (spec "Events > Delivery request", "Retries and dead letter").

The HTTP request is made outside any transaction, under the caller's lease; the attempt and
the delivery's next due time are recorded in one statement (webhooks/statements).
"""

import datetime
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from django.utils import timezone

from api.errors import ValidationFailed
from api.renderers import dumps
from events.models import Event
from events.serializers import event_to_dict
from webhooks import metrics, statements, transport
from webhooks.claims import delivery_claim, delivery_claim_next
from webhooks.crypto import UnreadableSecret
from webhooks.lifecycle import after_failure, endpoint_gone
from webhooks.models import Attempt, Delivery, WebhookEndpoint
from webhooks.ordering import release_next
from webhooks.signing import active_secrets, signature_header
from webhooks.urlguard import check_url

log = logging.getLogger(__name__)

RETRY_DELAYS = tuple(datetime.timedelta(seconds=s) for s in (10, 60, 300, 1800, 7200, 21600, 86400))
RETRY_WINDOW = datetime.timedelta(hours=72)  # after the event's creation, at the latest
# The `http_status` of an attempt that got no response (timeout, refused, TLS, URL refused):
# the spec's attempt object has an integer there, not null (docs/webhooks.md "Delivery").
NO_RESPONSE = 0
GONE = 410  # the receiver says it is gone for good: its endpoint is disabled at once
# How long one task goes on claiming due deliveries after its own: long enough that under load
# one broker message drives dozens of deliveries, short enough that the worker's threads still
# take turns with the beat's tasks on the same queue.
DRAIN_SECONDS = 2.0
UNREADABLE_SECRET = (
    "signing secret: none of the configured keys decrypts it (was a key removed from "
    "WEBHOOK_ENCRYPTION_KEYS, or DJANGO_SECRET_KEY changed while that was unset?); nothing "
    "was sent"
)


def delivery_run(delivery_id: str) -> Attempt | None:
    """What the task does: claim, attempt, record. A no-op for a delivery not due."""
    delivery = delivery_claim(delivery_id)
    return delivery_attempt(delivery) if delivery is not None else None


def deliveries_drain(*, livemode: bool, seconds: float = DRAIN_SECONDS) -> bool:
    """Claim and attempt due deliveries of the mode one after another, oldest first and only
    to endpoints and accounts with a free place, until none is left or `seconds` have passed
    (checked after each attempt, so a hanging receiver overruns it by one attempt's deadline
    at most, and the bulkhead keeps such threads to 8 an endpoint and
    WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT an account). True when stopped with work perhaps left:
    the caller nudges again."""
    deadline = time.monotonic() + seconds
    while (delivery := delivery_claim_next(livemode)) is not None:
        delivery_attempt(delivery)
        if time.monotonic() >= deadline:
            return True
    return False


def delivery_attempt(delivery: Delivery) -> Attempt | None:
    """POST the event to the endpoint (no transaction open) and record the attempt.
    The caller holds the lease. None when the endpoint was deleted meanwhile, or when the
    lease ran out and another worker took the delivery over (see `delivery_record`)."""
    if _set_aside_for_endpoint(delivery):
        return None
    attempted_at = timezone.now()
    outcome = _send(delivery.event, delivery.endpoint, attempted_at)
    return delivery_record(delivery, outcome, attempted_at)


def deliveries_attempt_at_once(deliveries: list[Delivery]) -> list[Attempt | None]:
    """simulate-webhook's inline attempts: every POST at once, each on a thread of its own
    (no database there: the URL check, signing and the request), then each recorded on the
    caller's thread. So n endpoints hold the caller as long as the slowest attempt, at most
    the URL check's 5 s DNS wait plus the attempt's 10 s deadline, not n attempts one after
    another (16 x 15 s overran the 60 s lease, and the worker sent them again), and well
    inside the lease the caller holds on each delivery."""
    deliveries = [d for d in deliveries if not _set_aside_for_endpoint(d)]
    if not deliveries:
        return []
    attempted_at = timezone.now()
    with ThreadPoolExecutor(len(deliveries), thread_name_prefix="webhook-inline") as pool:
        outcomes = list(pool.map(lambda d: _send(d.event, d.endpoint, attempted_at), deliveries))
    return [delivery_record(d, o, attempted_at) for d, o in zip(deliveries, outcomes, strict=True)]


def _set_aside_for_endpoint(delivery: Delivery) -> bool:
    """A claimed delivery whose endpoint was deleted is canceled, one whose endpoint was
    disabled or paused is held (its retry came round after that): nothing is sent."""
    endpoint = delivery.endpoint
    if endpoint.deleted_at is not None:
        status = Delivery.Status.CANCELED
    elif endpoint.disabled_at is not None or endpoint.paused_at is not None:
        status = Delivery.Status.HELD
    else:
        return False
    Delivery.objects.filter(pk=delivery.pk).update(
        status=status, next_attempt_at=None, claimed_until=None, enqueued_until=None
    )
    return True


def _send(event: Event, endpoint: WebhookEndpoint, attempted_at) -> transport.Outcome:
    """The POST, or why it was not made: a failure either way, recorded like any other, so
    the delivery moves on along its schedule instead of being claimed again and again."""
    try:
        target = check_url(endpoint.url)  # again before every delivery (spec "Delivery request")
    except ValidationFailed as refused:
        return transport.Outcome(None, "", f"{refused.code}: {refused.message}", 0)
    try:
        secrets = active_secrets(endpoint, attempted_at)
    except UnreadableSecret:
        return transport.Outcome(None, "", UNREADABLE_SECRET, 0)
    body = dumps(event_to_dict(event))
    return transport.post(target, body, delivery_headers(event, secrets, body, attempted_at))


def delivery_headers(event: Event, secrets: list[str], body: bytes, now) -> dict:
    return {
        "Content-Type": "application/json; charset=utf-8",
        "Service-Signature": signature_header(secrets, int(now.timestamp()), body),
        "Service-Event-Id": event.id,
        "Service-Event-Type": event.type,
        "Idempotency-Key": event.id,  # stable across retries, so receivers can deduplicate
    }


def next_retry_at(event: Event, failed_attempt: int, now: datetime.datetime):
    """When to try again after attempt number `failed_attempt` failed; None: no more tries."""
    if failed_attempt > len(RETRY_DELAYS):
        return None
    at = now + RETRY_DELAYS[failed_attempt - 1]
    return at if at <= event.created + RETRY_WINDOW else None


def delivery_record(delivery: Delivery, outcome: transport.Outcome, attempted_at) -> Attempt | None:
    """Record the attempt and what comes next, if the caller still holds the lease it took
    (`delivery.claimed_until`), which makes `attempt_count` its own to increment. A caller
    whose lease ran out and was taken over records nothing (None): the worker that took it
    over sent that attempt number too and records it, once."""
    event = delivery.event
    now = timezone.now()
    number = delivery.attempt_count + 1
    if outcome.delivered and _sent_twice(delivery, number):
        retry_at, status = now, Delivery.Status.PENDING  # its duplicate goes out next
    elif outcome.delivered:
        retry_at, status = None, Delivery.Status.DELIVERED
    else:
        retry_at = next_retry_at(event, number, now)
        status = Delivery.Status.PENDING if retry_at else Delivery.Status.DEAD_LETTERED
    attempt = Attempt(
        delivery=delivery,
        event_id=delivery.event_id,
        endpoint_id=delivery.endpoint_id,
        attempt=number,
        status=Attempt.Status.DELIVERED if outcome.delivered else Attempt.Status.FAILED,
        http_status=outcome.http_status or NO_RESPONSE,
        response_body=_storable(outcome.response_body),
        error=_storable(outcome.error),
        duration_ms=outcome.duration_ms,
        next_retry_at=retry_at,
        attempted_at=attempted_at,
    )
    recorded = statements.backend().record(attempt, status, now, delivery.claimed_until)
    if not recorded.stored:
        log.warning(
            "attempt %d of delivery %s not recorded: its lease ended at %s and another worker "
            "took it over",
            number,
            delivery.pk,
            delivery.claimed_until,
        )
        return None
    if outcome.http_status == GONE:
        endpoint_gone(delivery.endpoint, delivery.event_id, now)
    elif recorded.streak is not None and not outcome.delivered:
        after_failure(delivery.endpoint, recorded.streak, now)
    if delivery.endpoint.ordered_delivery and status != Delivery.Status.PENDING:
        release_next(delivery.endpoint_id, event)  # the resource's next event may go now
    metrics.attempt_recorded(delivery, outcome, status, now)
    return attempt


def _sent_twice(delivery: Delivery, number: int) -> bool:
    """A test delivery its merchant's failure profile duplicates (webhooks.faults): delivered
    once, it is due again at once, and its second attempt posts the same event again."""
    return delivery.injected == Delivery.Injected.DUPLICATE and number == 1


def _storable(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL, and an attempt that cannot be stored would leave its
    delivery to be claimed again after every lease: NUL becomes U+FFFD, as undecodable bytes
    do. The body and the error (which may quote the receiver) both come from outside."""
    return None if text is None else text.replace("\x00", "\ufffd")
