"""Reads shared by the views, the admin, the operator commands, the fan-out and the beat
tasks."""

import datetime

from django.db import connection
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from api.errors import NotFound
from api.ids import ID_SLACK, id_floor, is_id
from events.models import Event
from infra import revision
from infra.rows import Columns, ModelRows
from webhooks.models import Attempt, Delivery, WebhookEndpoint

DUE_BATCH = 500
DEAD_LETTER_BATCH = 500  # requeue_dead_letters' default --batch-size
UNDISPATCHED_GRACE = datetime.timedelta(minutes=1)


def endpoints_of(merchant, livemode: bool):
    """Not deleted: listed and readable, enabled or disabled for failure."""
    return WebhookEndpoint.objects.filter(
        merchant=merchant, livemode=livemode, deleted_at__isnull=True
    )


def enabled_endpoints(merchant, livemode: bool):
    """Those events go to, and that the limit of 16 counts."""
    return endpoints_of(merchant, livemode).filter(disabled_at__isnull=True)


_ENDPOINT_ROWS = ModelRows(WebhookEndpoint)
# (merchant id, livemode) -> the rows of its enabled endpoints, as read
_endpoint_lists = revision.RevisionCache("WEBHOOK_ENDPOINT_CACHE", max_entries=4096)


# The merchant's row locked FOR KEY SHARE, then the revision read (webhooks/migrations/0005).
LOCKED_REVISION = "webhooks_fan_out_revision(%s)"
FAN_OUT_REVISION = f"SELECT {LOCKED_REVISION}"


def fan_out_lock_read(events) -> tuple[str, list] | None:
    """enabled_endpoint_list's first statement, for the events' writer to run in its own
    statement (its value is then `locked`): on PostgreSQL, for the events of one merchant."""
    merchants = {event.merchant_id for event in events}
    if connection.vendor != "postgresql" or len(merchants) != 1:
        return None
    return FAN_OUT_REVISION, [merchants.pop()]


def fan_out_nothing_guard(events) -> tuple[str, list] | None:
    """A condition (SQL and its parameters) under which the fan-out of `events` writes
    nothing, for their writer to put in the statement that writes them (one statement in
    autocommit instead of a transaction): their merchant and mode have no enabled endpoint
    in this process's list, kept under a revision that `webhooks_fan_out_revision` still
    reads there (taking the lock fan_out_lock_read takes). None: no such list is known."""
    modes = {(event.merchant_id, event.livemode) for event in events}
    if connection.vendor != "postgresql" or len(modes) != 1:
        return None
    ((merchant_id, livemode),) = modes
    kept = _endpoint_lists.latest((merchant_id, livemode))
    if kept is None or kept[1]:  # unknown, or endpoints to deliver to
        return None
    return f"{LOCKED_REVISION} = %s", [merchant_id, kept[0]]


def fan_out_revision(merchant_id: str, locked: int | None = None) -> int | None:
    """The revision the fan-out of the merchant's events goes by, read after the merchant's
    lock: `locked` when the caller's statement read it (fan_out_lock_read), else read now."""
    return locked if locked is not None else revision.read(FAN_OUT_REVISION, [merchant_id])


def enabled_endpoint_list(
    merchant_id: str, livemode: bool, locked: int | None = None
) -> list[WebhookEndpoint]:
    """list(enabled_endpoints(...).order_by("id")) as the fan-out must see it, fresh instances
    each call. Inside the transaction that writes the events: it first waits for any endpoint
    change of the merchant in flight and holds off the next until this transaction ends
    (`webhooks_fan_out_revision`, webhooks/migrations/0005; every change locks the merchant in
    `webhooks.lifecycle.endpoints_changing`), so an event commits either before an endpoint
    change or fanned out with it. The rows are kept in each process under the configuration
    revision (infra/revision.py), read after that wait in the same statement: most merchants
    have no endpoint, and their payments then read nothing more. `locked`: that statement's
    value, when the caller ran it in this transaction (fan_out_lock_read)."""
    key = (merchant_id, livemode)
    under, rows = _endpoint_lists.get(key, fan_out_revision(merchant_id, locked))
    if rows is None:
        rows = _enabled_endpoint_rows(merchant_id, livemode)
        _endpoint_lists.put(key, under, rows)
    return [_ENDPOINT_ROWS.instance(row) for row in rows]


def _enabled_endpoint_rows(merchant_id: str, livemode: bool) -> tuple:
    """By hand: the ORM would spend longer compiling it than running it."""
    w = Columns(WebhookEndpoint)
    sql = (
        f"SELECT {_ENDPOINT_ROWS.columns} FROM {w.table} WHERE {w.merchant} = %s"
        f" AND {w.livemode} = %s AND {w.deleted_at} IS NULL AND {w.disabled_at} IS NULL"
        f" ORDER BY {w.id}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [merchant_id, livemode])
        return tuple(cursor.fetchall())


def events_of(merchant, livemode: bool, *, type: str | None = None, resource: str | None = None):
    """Events of one merchant and mode (modes never mix), optionally one type or resource."""
    events = Event.objects.filter(merchant=merchant, livemode=livemode)
    if type:
        events = events.filter(type=type)
    if resource:
        events = events.filter(resource_id=resource)
    return events


def event_get(*, merchant, livemode: bool, event_id: str) -> Event:
    """What is not an `evt_` id is not looked up (a NUL byte cannot be sent to PostgreSQL)."""
    if not is_id(event_id, "evt"):
        raise NotFound("No such event.")
    event = events_of(merchant, livemode).filter(pk=event_id).first()
    if event is None:
        raise NotFound("No such event.")
    return event


def dead_letters(*, merchant_id: str | None = None, since: datetime.datetime | None = None):
    """Deliveries that ran out of retries, oldest event first, read in that order from
    delivery_dead_letter (event, endpoint). `since` also starts the read at its events' id
    floor (ids are made with `created`), so the older dead letters are not walked."""
    deliveries = Delivery.objects.filter(status=Delivery.Status.DEAD_LETTERED)
    if merchant_id:
        deliveries = deliveries.filter(event__merchant_id=merchant_id)
    if since:
        deliveries = deliveries.filter(
            event_id__gte=id_floor("evt", since - ID_SLACK), event__created__gte=since
        )
    return deliveries.order_by("event_id", "endpoint_id")


def dead_letter_batches(*, merchant_id=None, since=None, size: int = DEAD_LETTER_BATCH):
    """dead_letters() `size` at a time, each batch the range of delivery_dead_letter after
    the last one's (event, endpoint) key: bounded reads, and no row twice even when the
    caller requeues each batch (a requeued row leaves the dead letters; one that dies again
    meanwhile is behind the key)."""
    deliveries = dead_letters(merchant_id=merchant_id, since=since)
    batch = list(deliveries[:size])
    while batch:
        yield batch
        if len(batch) < size:
            return
        event_id, endpoint_id = batch[-1].event_id, batch[-1].endpoint_id
        after = deliveries.filter(event_id__gte=event_id).exclude(
            event_id=event_id, endpoint_id__lte=endpoint_id
        )
        batch = list(after[:size])


def recoverable_deliveries(
    endpoint, since, now, starting_after: str | None = None, quiet_since=None
):
    """Recover's candidates, oldest event first: the endpoint's deliveries of events created
    at or after `since` (and after the event id `starting_after`) that failed: waiting for a
    retry not yet due, dead-lettered, or held; with `quiet_since`, only those not attempted
    since then. Read through `delivery_recoverable`, by event id from the floor of `since`
    (ids are time-ordered), never the delivered history; a delivery's attempts through
    `attempt_numbers_unique`."""
    failed = Q(status__in=[Delivery.Status.DEAD_LETTERED, Delivery.Status.HELD]) | Q(
        status=Delivery.Status.PENDING, attempt_count__gt=0, next_attempt_at__gt=now
    )
    deliveries = Delivery.objects.filter(
        failed,
        endpoint=endpoint,
        event_id__gte=id_floor("evt", since),
        event__created__gte=since,
    )
    if starting_after:
        deliveries = deliveries.filter(event_id__gt=starting_after)
    if quiet_since is not None:
        recent = Attempt.objects.filter(delivery=OuterRef("pk"), attempted_at__gte=quiet_since)
        deliveries = deliveries.filter(~Exists(recent))
    return deliveries.order_by("event_id")


def due_without_nudge(now, limit: int) -> list[tuple[str, str]]:
    """(delivery id, endpoint id) of claimable deliveries without a live nudge, oldest first:
    what the beat tick considers nudging."""
    due = Delivery.objects.claimable(now).filter(
        Q(enqueued_until__isnull=True) | Q(enqueued_until__lte=now)
    )
    return list(due.order_by("next_attempt_at").values_list("pk", "endpoint_id")[:limit])


def undispatched_event_ids(limit: int = DUE_BATCH) -> list[str]:
    """Events whose fan-out never happened (written with the hooks off, or lost to a crash).
    Events younger than a minute are left to their own."""
    cutoff = timezone.now() - UNDISPATCHED_GRACE
    events = Event.objects.filter(dispatched_at__isnull=True, created__lte=cutoff)
    return list(events.order_by("created").values_list("pk", flat=True)[:limit])


def delivery_ids_by_mode(delivery_ids: list[str]) -> dict[bool, list[str]]:
    """{livemode: ids} of these deliveries (from their endpoints), in the order given."""
    modes = dict(
        Delivery.objects.filter(pk__in=delivery_ids).values_list("pk", "endpoint__livemode")
    )
    by_mode: dict[bool, list[str]] = {}
    for delivery_id in delivery_ids:
        if delivery_id in modes:
            by_mode.setdefault(modes[delivery_id], []).append(delivery_id)
    return by_mode
