"""Deliveries: fan-out of an event to the endpoints subscribed to it, one attempt at a time,
the retry schedule and the dead letter (spec "Events > Delivery request", "Retries and dead
letter"; ARCHITECTURE.md "Events and the outbox").

A delivery is a row; the broker only nudges. A worker claims a due row with a conditional
update that sets a lease (`claimed_until`), makes the HTTP request outside any transaction, and
records the attempt and the next due time in one transaction. A worker that dies mid-request
leaves the lease to run out, after which the beat tick finds the row due again: the event is
sent again (at least once) and receivers deduplicate on its id.
"""

import datetime
import logging
import smtplib
import time
from functools import cache
from typing import NamedTuple

from django.core.mail import send_mail
from django.db import connection, transaction
from django.db.models import Count, Min, Q
from django.utils import timezone

from api.errors import ProcessingFailed, ValidationFailed
from api.renderers import dumps
from api.rows import ModelRows, insert_rows, insert_sql, instance_values, mark_stored
from events.catalogue import matches_any
from events.models import Event
from events.serializers import event_to_dict
from webhooks import transport
from webhooks.models import Attempt, Delivery, WebhookEndpoint
from webhooks.services import enabled_endpoint_list, enabled_endpoints
from webhooks.signing import active_secrets, signature_header
from webhooks.urlguard import check_url

log = logging.getLogger(__name__)

RETRY_DELAYS = tuple(datetime.timedelta(seconds=s) for s in (10, 60, 300, 1800, 7200, 21600, 86400))
RETRY_WINDOW = datetime.timedelta(hours=72)  # after the event's creation, at the latest
# Longer than one attempt can take (URL check + the 10 s timeout), so a live attempt is never
# taken over; short enough that a crashed worker's delivery is retried within about a minute.
LEASE = datetime.timedelta(seconds=60)
# How long a nudge may sit in the broker before the beat tick assumes it lost and sends another.
ENQUEUED_GRACE = datetime.timedelta(seconds=30)
# Bulkhead: one endpoint may tie up at most this many workers at once (half the Procfile's 16
# delivery threads), so a receiver that makes every attempt wait out the 10 s timeout cannot
# take them all, and deliveries to healthy endpoints keep flowing. Its other due deliveries
# wait, without an attempt and without a nudge: until one of its places frees up when the
# endpoint is merely busy, for the timeout when its attempts hang.
MAX_IN_FLIGHT_PER_ENDPOINT = 8
SLOW_ATTEMPT = datetime.timedelta(seconds=1)
STUCK_ENDPOINT_BACKOFF = datetime.timedelta(seconds=transport.TIMEOUT_SECONDS)
DUE_BATCH = 500
# How long one task goes on claiming due deliveries after its own: long enough that under load
# one broker message drives dozens of deliveries, short enough that the worker's threads still
# take turns with the beat's tasks on the same queue.
DRAIN_SECONDS = 2.0

PENDING = Delivery.Status.PENDING


def endpoints_for(event_type: str, endpoints: list[WebhookEndpoint]) -> list[WebhookEndpoint]:
    """Those of `endpoints` subscribed to the type; 422 `no_matching_endpoint` when none is."""
    subscribed = [e for e in endpoints if matches_any(e.enabled_events, event_type)]
    if not subscribed:
        raise ProcessingFailed(
            f"No enabled webhook endpoint in this mode is subscribed to {event_type}.",
            code="no_matching_endpoint",
        )
    return subscribed


# --- fan-out ---------------------------------------------------------------------------------


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
            .only("merchant_id", "livemode", "type")
            .order_by("id")
        )
        if not events:
            return []
        delivery_ids = deliveries_for(events)
        Event.objects.filter(pk__in=[event.pk for event in events]).update(
            dispatched_at=timezone.now()
        )
    return delivery_ids


def deliveries_for(events: list[Event]) -> list[str]:
    """Inside the caller's transaction: a pending delivery per event and subscribed endpoint.
    Returns the ids of those to nudge a worker for once the transaction commits: no more per
    endpoint than it has free places (`nudges_wanted`), so a backlog costs a few messages, not
    one per delivery."""
    now = timezone.now()
    enabled: dict[tuple, list[WebhookEndpoint]] = {}  # one query per merchant and mode
    pairs = []
    for event in events:
        mode = (event.merchant_id, event.livemode)
        if mode not in enabled:
            enabled[mode] = enabled_endpoint_list(*mode)
        subscribed = [e for e in enabled[mode] if matches_any(e.enabled_events, event.type)]
        pairs += [(event, e) for e in subscribed]
    if not pairs:
        return []
    loads = endpoint_loads(list({e.id for _, e in pairs}), now)
    # To an endpoint that hangs right now the first attempt waits like its other deliveries
    # (bulkhead); the beat tick nudges it when that wait is over.
    deliveries = [
        Delivery(
            event=event,
            endpoint=e,
            next_attempt_at=now + STUCK_ENDPOINT_BACKOFF if loads[e.id].hanging(now) else now,
        )
        for event, e in pairs
    ]
    nudged = set(_allot([(d.id, d.endpoint_id) for d in deliveries], loads))
    for delivery in deliveries:
        if delivery.id in nudged:
            delivery.enqueued_until = now + ENQUEUED_GRACE  # the caller enqueues them
    # A resend may already have made one of these rows: that row stands. By hand, as the
    # payment's other inserts: it runs in the transaction of every event with subscribers.
    rows = [instance_values(delivery) for delivery in deliveries]
    insert_rows(Delivery, rows, suffix="ON CONFLICT DO NOTHING")
    return [d.id for d in deliveries if d.id in nudged]


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
            status=PENDING, next_attempt_at=now, enqueued_until=now + ENQUEUED_GRACE
        )
        Event.objects.filter(deliveries__pk__in=ids).update(dead_lettered_at=None)
    return ids


def event_resend(*, event: Event, endpoint: WebhookEndpoint | None = None) -> list[str]:
    """Another attempt now for each endpoint subscribed to the event (or the one named)."""
    if endpoint is None:
        candidates = list(enabled_endpoints(event.merchant_id, event.livemode))
    else:
        candidates = [endpoint]
    endpoints = endpoints_for(event.type, candidates)
    with transaction.atomic():
        deliveries = [Delivery.objects.get_or_create(event=event, endpoint=e)[0] for e in endpoints]
        return deliveries_reopen(deliveries)


# --- one attempt -----------------------------------------------------------------------------


def _claimable(now: datetime.datetime):
    return Delivery.objects.filter(status=PENDING, next_attempt_at__lte=now).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)
    )


class Load(NamedTuple):
    """An endpoint's attempts in flight (leases live, the oldest ending at `oldest_lease`) and
    its due deliveries with a nudge waiting in the broker."""

    in_flight: int = 0
    oldest_lease: datetime.datetime | None = None
    nudged: int = 0

    def hanging(self, now) -> bool:
        """All of its places are taken, the oldest for over a second: its receiver is slow
        or dead, not merely busy."""
        return (
            self.in_flight >= MAX_IN_FLIGHT_PER_ENDPOINT
            and now - (self.oldest_lease - LEASE) > SLOW_ATTEMPT
        )

    def nudges_wanted(self) -> int:
        """Free places not yet spoken for by a nudge. A thread whose attempt ends claims the
        endpoint's next due delivery itself (deliveries_drain), so a full endpoint needs none."""
        return max(0, MAX_IN_FLIGHT_PER_ENDPOINT - self.in_flight - self.nudged)


def _allot(candidates: list[tuple[str, str]], loads: dict[str, Load]) -> list[str]:
    """Of (delivery id, endpoint id) pairs, oldest first, those worth a nudge."""
    wanted = {endpoint_id: load.nudges_wanted() for endpoint_id, load in loads.items()}
    allotted = []
    for delivery_id, endpoint_id in candidates:
        if wanted[endpoint_id] > 0:
            wanted[endpoint_id] -= 1
            allotted.append(delivery_id)
    return allotted


def delivery_claim(delivery_id: str) -> Delivery | None:
    """Take the lease on a due delivery, or None: not due, taken, finished or gone, or its
    endpoint has no free place (then it stays due, postponed if the endpoint hangs)."""
    now = timezone.now()
    lease = now + LEASE
    return _within_bulkhead(_claim_and_load(delivery_id, now, lease), now, lease)


def delivery_claim_next() -> Delivery | None:
    """Take the lease on the oldest due delivery whose endpoint has a free place, if any."""
    now = timezone.now()
    lease = now + LEASE
    return _within_bulkhead(_claim_next_and_load(now, lease), now, lease)


def _within_bulkhead(delivery: Delivery | None, now, lease) -> Delivery | None:
    """The claimed delivery, or None if its endpoint turns out to be full: counted after the
    claim committed, so two workers claiming for one endpoint at once each see the other's
    lease and the endpoint never exceeds its share."""
    if delivery is None:
        return None
    load = attempts_in_flight(delivery.endpoint_id, now, excluding=delivery.pk)
    if load.in_flight < MAX_IN_FLIGHT_PER_ENDPOINT:
        return delivery
    release = Delivery.objects.filter(pk=delivery.pk, claimed_until=lease)
    if load.hanging(now):
        # No room for a while. The beat tick brings it back.
        until = now + STUCK_ENDPOINT_BACKOFF
        release.update(claimed_until=None, next_attempt_at=until, enqueued_until=None)
        _postpone_stuck_endpoint(delivery.endpoint_id, now, until)
    else:
        # Due still, without a nudge: the threads delivering to the endpoint claim it as they
        # finish, or the beat tick nudges it once the endpoint has room.
        release.update(claimed_until=None, enqueued_until=None)
    return None


def deliveries_drain(seconds: float = DRAIN_SECONDS) -> bool:
    """Claim and attempt due deliveries one after another, oldest first and only to endpoints
    with a free place, until none is left or `seconds` have passed (checked after each
    attempt, so a hanging receiver overruns it by one timeout at most, and the bulkhead keeps
    such threads to 8). True when stopped with work perhaps left: the caller nudges again."""
    deadline = time.monotonic() + seconds
    while (delivery := delivery_claim_next()) is not None:
        delivery_attempt(delivery)
        if time.monotonic() >= deadline:
            return True
    return False


# Every nudge runs a claim, and every attempt the in-flight count and the record, so these
# statements are written by hand (api/rows.py says why).
_DELIVERY_ROWS = ModelRows(Delivery, "d")
_EVENT_ROWS = ModelRows(Event, "e")
_ENDPOINT_ROWS = ModelRows(WebhookEndpoint, "w")
_CLAIMABLE_SQL = """status = %(pending)s AND next_attempt_at <= %(now)s
              AND (claimed_until IS NULL OR claimed_until <= %(now)s)"""


def _claimed_sql(claimed: str) -> str:
    """The delivery `claimed` (a data-modifying CTE) returns, with its event and endpoint
    (select_related), in one statement."""
    return f"""
        WITH {claimed}
        SELECT {_DELIVERY_ROWS.columns}, {_EVENT_ROWS.columns}, {_ENDPOINT_ROWS.columns}
        FROM d
        JOIN {Event._meta.db_table} e ON e.id = d.event_id
        JOIN {WebhookEndpoint._meta.db_table} w ON w.id = d.endpoint_id
    """


@cache
def _claim_sql() -> str:
    """_claimable(now).filter(pk=...).update(claimed_until=lease), and the row."""
    return _claimed_sql(f"""d AS (
            UPDATE {Delivery._meta.db_table} SET claimed_until = %(lease)s
            WHERE id = %(id)s AND {_CLAIMABLE_SQL}
            RETURNING *
        )""")


@cache
def _claim_next_sql() -> str:
    """The oldest claimable delivery of an endpoint with a free place, leased, and the row.
    SKIP LOCKED: threads claiming at once take different rows instead of queueing."""
    table = Delivery._meta.db_table
    return _claimed_sql(f"""full_endpoints AS (
            SELECT endpoint_id FROM {table}
            WHERE status = %(pending)s AND claimed_until > %(now)s
            GROUP BY endpoint_id HAVING count(*) >= %(places)s
        ), next AS (
            SELECT id FROM {table}
            WHERE {_CLAIMABLE_SQL}
              AND endpoint_id NOT IN (SELECT endpoint_id FROM full_endpoints)
            ORDER BY next_attempt_at LIMIT 1
            FOR UPDATE SKIP LOCKED
        ), d AS (
            UPDATE {table} SET claimed_until = %(lease)s
            WHERE id = (SELECT id FROM next)
            RETURNING *
        )""")


def _claim_and_load(delivery_id: str, now, lease) -> Delivery | None:
    if connection.vendor != "postgresql":  # SQLite has no UPDATE inside WITH
        return _claim_by_orm(delivery_id, now, lease)
    return _fetch_claimed(_claim_sql(), {"id": delivery_id, "now": now, "lease": lease})


def _claim_next_and_load(now, lease) -> Delivery | None:
    if connection.vendor != "postgresql":  # nor FOR UPDATE SKIP LOCKED
        full = (
            _in_flight(now)
            .values("endpoint_id")
            .annotate(n=Count("pk"))
            .filter(n__gte=MAX_IN_FLIGHT_PER_ENDPOINT)
            .values("endpoint_id")
        )
        claimable = _claimable(now).exclude(endpoint_id__in=full).order_by("next_attempt_at")
        delivery_id = claimable.values_list("pk", flat=True).first()
        return None if delivery_id is None else _claim_by_orm(delivery_id, now, lease)
    params = {"now": now, "lease": lease, "places": MAX_IN_FLIGHT_PER_ENDPOINT}
    return _fetch_claimed(_claim_next_sql(), params)


def _claim_by_orm(delivery_id: str, now, lease) -> Delivery | None:
    if not _claimable(now).filter(pk=delivery_id).update(claimed_until=lease):
        return None
    return Delivery.objects.select_related("event", "endpoint").get(pk=delivery_id)


def _fetch_claimed(sql: str, params: dict) -> Delivery | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, {"pending": PENDING, **params})
        row = cursor.fetchone()
    if row is None:
        return None  # nothing due, or another worker won the race
    delivery = _DELIVERY_ROWS.instance(row)
    delivery.event = _EVENT_ROWS.instance(row, len(_DELIVERY_ROWS))
    delivery.endpoint = _ENDPOINT_ROWS.instance(row, len(_DELIVERY_ROWS) + len(_EVENT_ROWS))
    return delivery


def _in_flight(now):
    return Delivery.objects.filter(status=PENDING, claimed_until__gt=now)


def attempts_in_flight(endpoint_id: str, now, excluding: str) -> Load:
    """The endpoint's attempts being made right now, but `excluding`'s: the aggregate of
    _in_flight(now) for one endpoint, by hand (run on every claim)."""
    if connection.vendor != "postgresql":  # SQLite's min() of a timestamp is text
        in_flight = _in_flight(now).filter(endpoint_id=endpoint_id).exclude(pk=excluding)
        return Load(*in_flight.aggregate(Count("pk"), Min("claimed_until")).values())
    sql = f"""
        SELECT count(*), min(claimed_until) FROM {Delivery._meta.db_table}
        WHERE endpoint_id = %s AND status = %s AND claimed_until > %s AND id <> %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [endpoint_id, PENDING, now, excluding])
        return Load(*cursor.fetchone())


def endpoint_loads(endpoint_ids: list[str], now) -> dict[str, Load]:
    """Load of each endpoint, in one statement (the fan-out runs it in every transaction that
    writes events for subscribed endpoints, the beat tick every second)."""
    loads = dict.fromkeys(endpoint_ids, Load())
    if connection.vendor != "postgresql":  # SQLite's min() of a timestamp is text
        loads.update(_endpoint_loads_by_orm(endpoint_ids, now))
        return loads
    # Two range reads of the small lease and nudge indexes, never an endpoint's backlog (a
    # dead endpoint's may be days of deliveries); as a UNION, so the planner keeps to them.
    table = Delivery._meta.db_table
    sql = f"""
        SELECT endpoint_id, count(claimed_until), min(claimed_until),
            count(*) - count(claimed_until)
        FROM (
            SELECT endpoint_id, claimed_until FROM {table}
            WHERE claimed_until > %(now)s AND status = %(pending)s AND endpoint_id = ANY(%(ids)s)
            UNION ALL
            SELECT endpoint_id, NULL FROM {table}
            WHERE enqueued_until > %(now)s AND {_CLAIMABLE_SQL} AND endpoint_id = ANY(%(ids)s)
        ) AS load
        GROUP BY endpoint_id
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, {"now": now, "pending": PENDING, "ids": endpoint_ids})
        loads.update((endpoint_id, Load(*row)) for endpoint_id, *row in cursor.fetchall())
    return loads


def _endpoint_loads_by_orm(endpoint_ids: list[str], now) -> dict[str, Load]:
    leased = Q(claimed_until__gt=now)
    waiting = _claimable(now).filter(enqueued_until__gt=now)
    rows = (
        Delivery.objects.filter(endpoint_id__in=endpoint_ids)
        .filter(Q(status=PENDING, claimed_until__gt=now) | Q(pk__in=waiting.values("pk")))
        .values("endpoint_id")
        .annotate(
            in_flight=Count("pk", filter=leased),
            oldest_lease=Min("claimed_until", filter=leased),
            nudged=Count("pk", filter=~leased),
        )
    )
    return {row.pop("endpoint_id"): Load(**row) for row in rows}


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
            _claimable(now).filter(endpoint_id=endpoint_id).select_for_update(skip_locked=True)
        )
        Delivery.objects.filter(pk__in=list(waiting.values_list("pk", flat=True))).update(
            next_attempt_at=until, enqueued_until=None
        )


def delivery_headers(event: Event, endpoint: WebhookEndpoint, body: bytes, now) -> dict:
    return {
        "Content-Type": "application/json; charset=utf-8",
        "Service-Signature": signature_header(
            active_secrets(endpoint, now), int(now.timestamp()), body
        ),
        "Service-Event-Id": event.id,
        "Service-Event-Type": event.type,
        "Idempotency-Key": event.id,  # stable across retries, so receivers can deduplicate
    }


def delivery_attempt(delivery: Delivery) -> Attempt | None:
    """POST the event to the endpoint (no transaction open) and record the attempt.
    The caller holds the lease. None when the endpoint was deleted meanwhile."""
    endpoint, event = delivery.endpoint, delivery.event
    if endpoint.deleted_at is not None:
        Delivery.objects.filter(pk=delivery.pk).update(
            status=Delivery.Status.CANCELED, next_attempt_at=None, claimed_until=None
        )
        return None
    attempted_at = timezone.now()
    try:
        target = check_url(endpoint.url)  # again before every delivery (spec "Delivery request")
    except ValidationFailed as refused:
        outcome = transport.Outcome(None, "", f"{refused.code}: {refused.message}", 0)
    else:
        body = dumps(event_to_dict(event))
        outcome = transport.post(
            target, body, delivery_headers(event, endpoint, body, attempted_at)
        )
    return delivery_record(delivery, outcome, attempted_at)


def next_retry_at(event: Event, failed_attempt: int, now: datetime.datetime):
    """When to try again after attempt number `failed_attempt` failed; None: no more tries."""
    if failed_attempt > len(RETRY_DELAYS):
        return None
    at = now + RETRY_DELAYS[failed_attempt - 1]
    return at if at <= event.created + RETRY_WINDOW else None


def delivery_record(delivery: Delivery, outcome: transport.Outcome, attempted_at) -> Attempt:
    """Record the attempt and what comes next. The caller's lease makes `attempt_count` its
    own to increment; the unique (delivery, attempt) constraint backs that up."""
    event = delivery.event
    now = timezone.now()
    number = delivery.attempt_count + 1
    retry_at = None if outcome.delivered else next_retry_at(event, number, now)
    if outcome.delivered:
        status = Delivery.Status.DELIVERED
    else:
        status = PENDING if retry_at else Delivery.Status.DEAD_LETTERED
    attempt = Attempt(
        delivery=delivery,
        event_id=delivery.event_id,
        endpoint_id=delivery.endpoint_id,
        attempt=number,
        status=Attempt.Status.DELIVERED if outcome.delivered else Attempt.Status.FAILED,
        http_status=outcome.http_status,
        response_body=outcome.response_body,
        error=outcome.error,
        duration_ms=outcome.duration_ms,
        next_retry_at=retry_at,
        attempted_at=attempted_at,
    )
    newly_dead = _write_attempt(attempt, status, now)
    if newly_dead:
        notify_owner_of_dead_letter(event, delivery.endpoint)
    return attempt


@cache
def _record_sql(insert: str) -> str:
    """One statement, so one atomic write and one round trip: the attempt (`insert`), the
    delivery's next state and, the first time one of the event's deliveries dies, the event's
    dead letter. Returns 1 when it set that dead letter."""
    return f"""
        WITH attempt AS ({insert}),
        dead AS (
            UPDATE {Event._meta.db_table} SET dead_lettered_at = %s
            WHERE id = %s AND %s AND dead_lettered_at IS NULL RETURNING 1
        )
        UPDATE {Delivery._meta.db_table} SET status = %s, attempt_count = %s,
            next_attempt_at = %s, claimed_until = NULL, enqueued_until = NULL
        WHERE id = %s
        RETURNING (SELECT count(*) FROM dead)
    """


def _write_attempt(attempt: Attempt, status: str, now) -> bool:
    """Store the attempt and the delivery's new status; True if this dead-lettered the event."""
    if connection.vendor != "postgresql":  # SQLite has no UPDATE inside WITH
        return _write_attempt_in_steps(attempt, status, now)
    insert, params = insert_sql(Attempt, [instance_values(attempt)])
    dies = status == Delivery.Status.DEAD_LETTERED
    params += [now, attempt.event_id, dies, status, attempt.attempt, attempt.next_retry_at]
    with connection.cursor() as cursor:
        cursor.execute(_record_sql(insert), [*params, attempt.delivery_id])
        (newly_dead,) = cursor.fetchone()
    mark_stored(attempt)
    return bool(newly_dead)


@transaction.atomic
def _write_attempt_in_steps(attempt: Attempt, status: str, now) -> bool:
    """_write_attempt() as three statements in one transaction, for the embedded SQLite."""
    attempt.save(force_insert=True)
    Delivery.objects.filter(pk=attempt.delivery_id).update(
        status=status,
        attempt_count=attempt.attempt,
        next_attempt_at=attempt.next_retry_at,
        claimed_until=None,
        enqueued_until=None,
    )
    dead = Event.objects.filter(pk=attempt.event_id, dead_lettered_at__isnull=True)
    return status == Delivery.Status.DEAD_LETTERED and bool(dead.update(dead_lettered_at=now))


def delivery_run(delivery_id: str) -> Attempt | None:
    """What the task does: claim, attempt, record. A no-op for a delivery not due."""
    delivery = delivery_claim(delivery_id)
    return delivery_attempt(delivery) if delivery is not None else None


# --- dead letter -----------------------------------------------------------------------------


def notify_owner_of_dead_letter(event: Event, endpoint: WebhookEndpoint) -> None:
    """Email the account owner (spec "Retries and dead letter" 2). Sent after the commit; a
    mail failure is logged, and the dead letter stays visible in the API and the admin."""
    mode = "live" if event.livemode else "test"
    try:
        send_mail(
            subject=f"Webhook event {event.id} could not be delivered",
            message=(
                f"We could not deliver the {mode}-mode event {event.id} ({event.type}) to your "
                f"webhook endpoint {endpoint.id} ({endpoint.url}) and have stopped retrying.\n\n"
                f"See GET /v1/events/{event.id} for every attempt, and resend it with "
                f"POST /v1/events/{event.id}/resend once the endpoint is fixed."
            ),
            from_email=None,
            recipient_list=[event.merchant.email],
        )
    except (smtplib.SMTPException, OSError):
        log.exception("dead-letter email for %s to merchant %s failed", event.id, event.merchant_id)


# --- what the beat tasks look for ------------------------------------------------------------


def due_delivery_ids(limit: int = DUE_BATCH) -> list[str]:
    """Due deliveries worth a nudge now, oldest first: retries whose time has come,
    deliveries whose nudge was lost or whose worker's lease ran out, and those left without
    one while their endpoint was full; no more per endpoint than it has free places. The
    waiting deliveries of an endpoint that hangs are postponed instead."""
    now = timezone.now()
    due = _claimable(now).filter(Q(enqueued_until__isnull=True) | Q(enqueued_until__lte=now))
    candidates = list(due.order_by("next_attempt_at").values_list("pk", "endpoint_id")[:limit])
    loads = endpoint_loads(list({endpoint_id for _, endpoint_id in candidates}), now)
    for endpoint_id, load in loads.items():
        if load.hanging(now):
            _postpone_stuck_endpoint(endpoint_id, now, now + STUCK_ENDPOINT_BACKOFF)
    return _allot(candidates, loads)


def deliveries_mark_enqueued(delivery_ids: list[str]) -> None:
    Delivery.objects.filter(pk__in=delivery_ids).update(
        enqueued_until=timezone.now() + ENQUEUED_GRACE
    )


def deliveries_mark_not_enqueued(delivery_ids: list[str]) -> None:
    """Their nudge could not be sent: due for the next beat tick, not in ENQUEUED_GRACE."""
    Delivery.objects.filter(pk__in=delivery_ids).update(enqueued_until=None)


UNDISPATCHED_GRACE = datetime.timedelta(minutes=1)


def undispatched_event_ids(limit: int = DUE_BATCH) -> list[str]:
    """Events whose after-commit fan-out never happened (lost nudge, crash, broker down).
    Events younger than a minute are left to their own nudge."""
    cutoff = timezone.now() - UNDISPATCHED_GRACE
    events = Event.objects.filter(dispatched_at__isnull=True, created__lte=cutoff)
    return list(events.order_by("created").values_list("pk", flat=True)[:limit])
