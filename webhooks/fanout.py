"""Fan-out: the deliveries of events, one per event and subscribed endpoint (ARCHITECTURE.md
"Events and the outbox"), and deliveries made due again (resend, requeue). A delivery is a
row; the broker only nudges, and each function returns the deliveries worth a nudge."""

from django.db import transaction
from django.utils import timezone

from api.errors import ProcessingFailed
from events.catalogue import matches_any
from events.models import Event
from infra.rows import insert_rows, instance_values, new_instance
from webhooks import statements
from webhooks.bulkhead import ENQUEUED_GRACE, LEASE, STUCK_ENDPOINT_BACKOFF, allot
from webhooks.faults import fault_apply, test_faults
from webhooks.models import Delivery, WebhookEndpoint
from webhooks.ordering import open_resources
from webhooks.selectors import enabled_endpoint_list, fan_out_revision


def endpoints_for(event_type: str, endpoints: list[WebhookEndpoint]) -> list[WebhookEndpoint]:
    """Those of `endpoints` subscribed to the type; 422 `no_matching_endpoint` when none is."""
    subscribed = [e for e in endpoints if matches_any(e.enabled_events, event_type)]
    if not subscribed:
        raise ProcessingFailed(
            f"No enabled webhook endpoint in this mode is subscribed to {event_type}.",
            code="no_matching_endpoint",
        )
    return subscribed


def events_fan_out(event_ids: list[str]) -> list[str]:
    """The sweeper's fan-out, for events committed without one (lost to a crash, or written
    before the hooks were configured), in one transaction: their deliveries, and
    `dispatched_at` set. Returns the deliveries to nudge a worker for. Safe to run twice (the
    second run finds the events dispatched)."""
    with transaction.atomic():
        events = list(
            Event.objects.select_for_update(skip_locked=True)
            .filter(pk__in=event_ids, dispatched_at__isnull=True)
            # Not `data` (a rendered resource each): decoding it would be the fan-out's main cost.
            .only("merchant_id", "livemode", "type", "resource_id")
            .order_by("id")
        )
        if not events:
            return []
        delivery_ids = deliveries_for(events)
        Event.objects.filter(pk__in=[event.pk for event in events]).update(
            dispatched_at=timezone.now()
        )
    return delivery_ids


def deliveries_for(events: list[Event], locked: int | None = None) -> list[str]:
    """Inside the caller's transaction: a pending delivery per event and subscribed endpoint.
    Returns the ids of those to nudge a worker for once the transaction commits: no more per
    endpoint than it has free places (`Load.nudges_wanted`), so a backlog costs a few
    messages, not one per delivery. `locked`: fan_out_lock_read's value, already read in
    this transaction (the events of one merchant)."""
    now = timezone.now()
    under: dict[str, int | None] = {}  # merchant id -> the revision its fan-out goes by
    enabled: dict[tuple, list[WebhookEndpoint]] = {}  # one query per merchant and mode
    pairs = []
    for event in events:
        mode = (event.merchant_id, event.livemode)
        if mode not in enabled:
            if event.merchant_id not in under:
                under[event.merchant_id] = fan_out_revision(event.merchant_id, locked)
            enabled[mode] = enabled_endpoint_list(*mode, locked=under[event.merchant_id])
        subscribed = [e for e in enabled[mode] if matches_any(e.enabled_events, event.type)]
        pairs += [(event, e) for e in subscribed]
    if not pairs:
        return []
    loads = statements.endpoint_loads(list({e.id for _, e in pairs}), now)
    waiting_resources = open_resources(pairs)
    deliveries = []
    for event, e in pairs:
        delivery = new_instance(Delivery, event=event, endpoint=e)
        key = (e.id, event.resource_id)
        if key in waiting_resources:
            delivery.status = Delivery.Status.BLOCKED  # an earlier event of it goes first
        elif e.paused_at is not None:
            delivery.status = Delivery.Status.HELD  # until its merchant resumes it
        elif loads[e.id].hanging(now):
            # To an endpoint that hangs right now the first attempt waits like its other
            # deliveries (bulkhead); the beat tick nudges it when that wait is over.
            delivery.next_attempt_at = now + STUCK_ENDPOINT_BACKOFF
        else:
            delivery.next_attempt_at = now
        if e.ordered_delivery:
            waiting_resources.add(key)  # the batch's next event of the resource waits too
        deliveries.append(delivery)
    _test_faults_apply(deliveries, now, under)
    # A delayed test delivery is not nudged: the beat tick finds it once due.
    pending = [
        d
        for d in deliveries
        if d.status == Delivery.Status.PENDING and d.injected != Delivery.Injected.DELAYED
    ]
    nudged = set(allot([(d.id, d.endpoint_id) for d in pending], loads))
    for delivery in deliveries:
        if delivery.id in nudged:
            delivery.enqueued_until = now + ENQUEUED_GRACE  # the caller enqueues them
    # A resend may already have made one of these rows: that row stands. By hand and
    # prepared (infra.keyed), as the payment's other inserts: it runs in the transaction of
    # every event with subscribers, in a few shapes (a row per event and endpoint).
    rows = [instance_values(delivery) for delivery in deliveries]
    insert_rows(Delivery, rows, suffix="ON CONFLICT DO NOTHING", keyed=True)
    return [d.id for d in deliveries if d.id in nudged]


def _test_faults_apply(deliveries: list[Delivery], now, under: dict) -> None:
    """The test deliveries due now take their merchant's profile faults (webhooks.faults), in
    order: one draw each. Live ones, and those blocked, held or backed off, draw nothing.
    `under`: each merchant's fan-out revision, which the profile's cached answer goes by."""
    drawing: dict[str, list[Delivery]] = {}
    for delivery in deliveries:
        if not delivery.event.livemode and delivery.next_attempt_at == now:
            drawing.setdefault(delivery.event.merchant_id, []).append(delivery)
    for merchant_id, batch in drawing.items():
        faults = test_faults(merchant_id, len(batch), under.get(merchant_id))
        for delivery, fault in zip(batch, faults, strict=True):
            fault_apply(delivery, fault, now)


def deliveries_create_claimed(event: Event, endpoints: list[WebhookEndpoint]) -> list[Delivery]:
    """Inside the caller's transaction: deliveries its own process attempts right after commit
    (simulate-webhook), leased so the beat tick does not race it to them."""
    now = timezone.now()
    deliveries = Delivery.objects.bulk_create(
        Delivery(event=event, endpoint=e, next_attempt_at=now, claimed_until=now + LEASE)
        for e in endpoints
    )
    Event.objects.filter(pk=event.pk).update(dispatched_at=now)
    return deliveries


def deliveries_reopen(deliveries) -> list[str]:
    """Resend and requeue: due now again, whatever their state; numbering continues."""
    now = timezone.now()
    ids = [d.id for d in deliveries]
    with transaction.atomic():
        Delivery.objects.filter(pk__in=ids).update(
            status=Delivery.Status.PENDING, next_attempt_at=now, enqueued_until=now + ENQUEUED_GRACE
        )
        Event.objects.filter(deliveries__pk__in=ids).update(dead_lettered_at=None)
    return ids


def event_deliveries_reopen(event: Event, endpoints: list[WebhookEndpoint]) -> list[str]:
    """The event's delivery to each endpoint, made if it has none, due now."""
    with transaction.atomic():
        deliveries = [Delivery.objects.get_or_create(event=event, endpoint=e)[0] for e in endpoints]
        return deliveries_reopen(deliveries)
