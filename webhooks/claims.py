"""Claims: a worker takes a due delivery by setting its lease (`claimed_until`), within the
endpoint's bulkhead, and the beat tick's pick of due deliveries worth a nudge (spec "Retries
and dead letter"; docs/webhooks.md "Claiming", "Bulkhead", "Nudges").

A worker that dies mid-request leaves the lease to run out, after which the beat tick finds the
row due again: the event is sent again (at least once) and receivers deduplicate on its id.
"""

import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from webhooks import selectors, statements
from webhooks.bulkhead import (
    ENQUEUED_GRACE,
    LEASE,
    MAX_IN_FLIGHT_PER_ENDPOINT,
    STUCK_ENDPOINT_BACKOFF,
    allot,
)
from webhooks.models import Delivery


def delivery_claim(delivery_id: str) -> Delivery | None:
    """Take the lease on a due delivery, or None: not due, taken, finished or gone, or its
    endpoint has no free place (then it stays due, postponed if the endpoint hangs)."""
    now = timezone.now()
    lease = now + LEASE
    return _within_bulkhead(statements.backend().claim(delivery_id, now, lease), now, lease)


def delivery_claim_next(livemode: bool) -> Delivery | None:
    """Take the lease on the oldest due delivery of the mode whose endpoint and account have a
    free place, if any."""
    now = timezone.now()
    lease = now + LEASE
    return _within_bulkhead(statements.backend().claim_next(now, lease, livemode), now, lease)


def _within_bulkhead(delivery: Delivery | None, now, lease) -> Delivery | None:
    """The claimed delivery, or None if its endpoint or its account turns out to be full:
    counted after the claim committed, so two workers claiming for one endpoint (or account)
    at once each see the other's lease and neither ever exceeds its share."""
    if delivery is None:
        return None
    load, account = statements.backend().in_flight(delivery, now)
    if (
        load.in_flight < MAX_IN_FLIGHT_PER_ENDPOINT
        and account.in_flight < settings.WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT
    ):
        return delivery
    release = Delivery.objects.filter(pk=delivery.pk, claimed_until=lease)
    if load.hanging(now):
        # No room for a while. The beat tick brings it back.
        until = now + STUCK_ENDPOINT_BACKOFF
        release.update(claimed_until=None, next_attempt_at=until, enqueued_until=None)
        _postpone_stuck_endpoint(delivery.endpoint_id, now, until)
    else:
        # Due still, without a nudge: the threads delivering to the endpoint (or account)
        # claim it as they finish, or the beat tick nudges it.
        release.update(claimed_until=None, enqueued_until=None)
    return None


# endpoint id -> until when this process has postponed its waiting deliveries
_stuck_endpoints: dict[str, datetime.datetime] = {}


def _postpone_stuck_endpoint(endpoint_id: str, now, until) -> None:
    """Postpone every waiting delivery of a hanging endpoint in one statement (once per backoff
    and process), so they leave the due set: claims stop scanning past them, and nudges still
    queued for them become one-query no-ops."""
    if _stuck_endpoints.get(endpoint_id, now) > now:
        return
    _stuck_endpoints[endpoint_id] = until
    with transaction.atomic():
        # skip_locked: rows another worker is claiming right now are left to it, and two
        # workers postponing at once never wait on (or deadlock over) each other's rows.
        waiting = (
            Delivery.objects.claimable(now)
            .filter(endpoint_id=endpoint_id)
            .select_for_update(skip_locked=True)
        )
        Delivery.objects.filter(pk__in=list(waiting.values_list("pk", flat=True))).update(
            next_attempt_at=until, enqueued_until=None
        )


def due_delivery_ids(limit: int = selectors.DUE_BATCH) -> list[str]:
    """Due deliveries worth a nudge now, oldest first: retries whose time has come,
    deliveries whose nudge was lost or whose worker's lease ran out, and those left without
    one while their endpoint was full; no more per endpoint than it has free places. The
    waiting deliveries of an endpoint that hangs are postponed instead."""
    now = timezone.now()
    candidates = selectors.due_without_nudge(now, limit)
    loads = statements.endpoint_loads(list({endpoint_id for _, endpoint_id in candidates}), now)
    for endpoint_id, load in loads.items():
        if load.hanging(now):
            _postpone_stuck_endpoint(endpoint_id, now, now + STUCK_ENDPOINT_BACKOFF)
    return allot(candidates, loads)


def deliveries_mark_enqueued(delivery_ids: list[str]) -> None:
    Delivery.objects.filter(pk__in=delivery_ids).update(
        enqueued_until=timezone.now() + ENQUEUED_GRACE
    )


def deliveries_mark_not_enqueued(delivery_ids: list[str]) -> None:
    """Their nudge could not be sent: due for the next beat tick, not in ENQUEUED_GRACE."""
    Delivery.objects.filter(pk__in=delivery_ids).update(enqueued_until=None)
