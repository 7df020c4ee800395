"""Per-resource ordered delivery (docs/webhooks.md "Ordering"): to an endpoint that opted in
(`ordered_delivery`), a resource's event waits, as a `blocked` delivery, until every earlier
event of that resource was delivered or dead-lettered there; other resources' events flow.

A blocked delivery is released (pending, due now) by the worker that finishes its
predecessor, right after recording that attempt; the beat tick releases those a crash or a
race left behind (a predecessor finishing while the fan-out that blocked its successor had
not committed yet). Either way the release re-checks, under the successor's row lock, that no
earlier delivery is still open, so two releasers cannot let two successors out at once.
"""

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from events.models import Event
from webhooks.models import Delivery, WebhookEndpoint

OPEN = (Delivery.Status.PENDING, Delivery.Status.HELD, Delivery.Status.BLOCKED)
RELEASE_BATCH = 500  # blocked deliveries the beat tick checks per run


def open_resources(pairs: list[tuple[Event, WebhookEndpoint]]) -> set[tuple[str, str]]:
    """(endpoint id, resource id) of the ordered endpoints among `pairs` that still have an
    open delivery of that resource's events: a new event of the resource must wait there."""
    ordered = {(e.id, event.resource_id) for event, e in pairs if e.ordered_delivery}
    if not ordered:
        return set()
    found = Delivery.objects.filter(
        endpoint_id__in={endpoint_id for endpoint_id, _ in ordered},
        event__resource_id__in={resource_id for _, resource_id in ordered},
        status__in=OPEN,
    ).values_list("endpoint_id", "event__resource_id")
    return set(found) & ordered


def _of_resource(endpoint_id: str, event: Event):
    return Delivery.objects.filter(
        endpoint_id=endpoint_id,
        event__merchant_id=event.merchant_id,
        event__livemode=event.livemode,
        event__resource_id=event.resource_id,
    )


def release_next(endpoint_id: str, event: Event) -> str | None:
    """After a delivery of `event` to the endpoint finished: the resource's next blocked
    delivery there is due now, unless an earlier one is still open. -> its id, or None."""
    of_resource = _of_resource(endpoint_id, event)
    with transaction.atomic():
        candidate = (
            of_resource.filter(status=Delivery.Status.BLOCKED)
            .order_by("event__resource_version")
            .select_for_update(of=("self",))
            .first()
        )
        # Checked after the lock: a releaser that got there first has committed by now.
        if candidate is None or _earlier_open(of_resource, candidate).exists():
            return None
        Delivery.objects.filter(pk=candidate.pk).update(
            status=Delivery.Status.PENDING, next_attempt_at=timezone.now(), enqueued_until=None
        )
    return candidate.pk


def _earlier_open(of_resource, delivery: Delivery):
    return of_resource.filter(
        status__in=OPEN, event__resource_version__lt=delivery.event.resource_version
    )


def blocked_release_due(limit: int = RELEASE_BATCH) -> list[str]:
    """Beat: release the blocked deliveries no earlier open delivery holds back any more."""
    earlier_open = Delivery.objects.filter(
        endpoint_id=OuterRef("endpoint_id"),
        status__in=OPEN,
        event__merchant_id=OuterRef("event__merchant_id"),
        event__livemode=OuterRef("event__livemode"),
        event__resource_id=OuterRef("event__resource_id"),
        event__resource_version__lt=OuterRef("event__resource_version"),
    )
    free = (
        Delivery.objects.filter(status=Delivery.Status.BLOCKED)
        .exclude(Exists(earlier_open))
        .select_related("event")
        .only("endpoint_id", "event__merchant_id", "event__livemode", "event__resource_id")
    )
    released = (release_next(d.endpoint_id, d.event) for d in free[:limit])
    return [delivery_id for delivery_id in released if delivery_id]


def blocked_release_all(endpoint: WebhookEndpoint) -> int:
    """Ordering switched off: its blocked deliveries are due now."""
    return Delivery.objects.filter(endpoint=endpoint, status=Delivery.Status.BLOCKED).update(
        status=Delivery.Status.PENDING, next_attempt_at=timezone.now(), enqueued_until=None
    )
