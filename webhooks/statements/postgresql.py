"""The delivery statements on PostgreSQL (interface: webhooks/statements/__init__.py), each
one hand-written statement: a claim is a data-modifying WITH returning the delivery with its
event and endpoint, the next claim takes its row with FOR UPDATE SKIP LOCKED (threads
claiming at once take different rows instead of queueing), the record is one atomic write.
`infra.rows` turns the rows into model instances as the ORM would, and names every table and
column from the models' metadata. The lifecycle conditions are DeliveryQuerySet's, written
here once each as SQL."""

from functools import cache

from django.conf import settings
from django.db import connection

from events.models import Event
from infra.rows import Columns, ModelRows, insert_sql, instance_values, mark_stored
from webhooks.bulkhead import (
    MAX_IN_FLIGHT_PER_ENDPOINT,
    Load,
    Recorded,
)
from webhooks.health import counted, streak_of
from webhooks.models import Attempt, Delivery, WebhookEndpoint

PENDING = Delivery.Status.PENDING
_DELIVERY_ROWS = ModelRows(Delivery, "d")
_EVENT_ROWS = ModelRows(Event, "e")
_ENDPOINT_ROWS = ModelRows(WebhookEndpoint, "w")


@cache
def _conditions(alias: str | None = None) -> tuple[str, str]:
    """DeliveryQuerySet.in_flight and .claimable, on %(pending)s and %(now)s."""
    d = Columns(Delivery, alias)
    in_flight = f"{d.status} = %(pending)s AND {d.claimed_until} > %(now)s"
    claimable = (
        f"{d.status} = %(pending)s AND {d.next_attempt_at} <= %(now)s"
        f" AND ({d.claimed_until} IS NULL OR {d.claimed_until} <= %(now)s)"
    )
    return in_flight, claimable


def _claimed_sql(claimed: str) -> str:
    """The delivery `claimed` (a data-modifying CTE named d) returns, with its event and
    endpoint (select_related), in one statement."""
    d, e, w = Columns(Delivery, "d"), Columns(Event, "e"), Columns(WebhookEndpoint, "w")
    return f"""
        WITH {claimed}
        SELECT {_DELIVERY_ROWS.columns}, {_EVENT_ROWS.columns}, {_ENDPOINT_ROWS.columns}
        FROM d
        JOIN {e.table} e ON {e.id} = {d.event}
        JOIN {w.table} w ON {w.id} = {d.endpoint}
    """


@cache
def _claim_sql() -> str:
    d = Columns(Delivery)
    _, claimable = _conditions()
    return _claimed_sql(f"""d AS (
            UPDATE {d.table} SET {d.claimed_until} = %(lease)s
            WHERE {d.id} = %(id)s AND {claimable}
            RETURNING *
        )""")


@cache
def _claim_next_sql() -> str:
    """The oldest due delivery of the mode whose endpoint and account (merchant and mode) both
    have a free place. The leases live now are a range read of a small index (the
    `delivery_leased` partial index), joined to their endpoints for the account; a candidate's
    own endpoint row (one index probe) tells its mode and account."""
    d, dl, w = Columns(Delivery), Columns(Delivery, "dl"), Columns(WebhookEndpoint, "w")
    in_flight, _ = _conditions("dl")
    _, claimable = _conditions()
    return _claimed_sql(f"""leased AS (
            SELECT {dl.endpoint} AS endpoint, {w.merchant} AS merchant
            FROM {dl.table} dl JOIN {w.table} w ON {w.id} = {dl.endpoint}
            WHERE {in_flight} AND {w.livemode} = %(livemode)s
        ), full_endpoints AS (
            SELECT endpoint FROM leased GROUP BY endpoint HAVING count(*) >= %(places)s
        ), full_accounts AS (
            SELECT merchant FROM leased GROUP BY merchant HAVING count(*) >= %(account_places)s
        ), next AS (
            SELECT {d.id} FROM {d.table}
            WHERE {claimable} AND {d.endpoint} NOT IN (SELECT * FROM full_endpoints)
                AND EXISTS (
                    SELECT FROM {w.table} w
                    WHERE {w.id} = {d.table}.{d.endpoint} AND {w.livemode} = %(livemode)s
                        AND {w.merchant} NOT IN (SELECT * FROM full_accounts)
                )
            ORDER BY {d.next_attempt_at} LIMIT 1
            FOR UPDATE SKIP LOCKED
        ), d AS (
            UPDATE {d.table} SET {d.claimed_until} = %(lease)s
            WHERE {d.id} = (SELECT * FROM next)
            RETURNING *
        )""")


def claim(delivery_id: str, now, lease) -> Delivery | None:
    return _fetch_claimed(_claim_sql(), {"id": delivery_id, "now": now, "lease": lease})


def claim_next(now, lease, livemode: bool) -> Delivery | None:
    params = {
        "now": now,
        "lease": lease,
        "livemode": livemode,
        "places": MAX_IN_FLIGHT_PER_ENDPOINT,
        "account_places": settings.WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT,
    }
    return _fetch_claimed(_claim_next_sql(), params)


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


@cache
def _in_flight_sql() -> str:
    dl, w = Columns(Delivery, "dl"), Columns(WebhookEndpoint, "w")
    in_flight, _ = _conditions("dl")
    mine = f"FILTER (WHERE {dl.endpoint} = %(endpoint)s)"
    return f"""
        SELECT count(*) {mine}, min({dl.claimed_until}) {mine}, count(*), min({dl.claimed_until})
        FROM {dl.table} dl JOIN {w.table} w ON {w.id} = {dl.endpoint}
        WHERE {in_flight} AND {dl.id} <> %(excluding)s
            AND {w.merchant} = %(merchant)s AND {w.livemode} = %(livemode)s
    """


def in_flight(delivery: Delivery, now) -> tuple[Load, Load]:
    params = {
        "endpoint": delivery.endpoint_id,
        "merchant": delivery.endpoint.merchant_id,
        "livemode": delivery.endpoint.livemode,
        "pending": PENDING,
        "now": now,
        "excluding": delivery.pk,
    }
    with connection.cursor() as cursor:
        cursor.execute(_in_flight_sql(), params)
        endpoint_n, endpoint_oldest, account_n, account_oldest = cursor.fetchone()
    return Load(endpoint_n, endpoint_oldest), Load(account_n, account_oldest)


@cache
def _loads_sql() -> str:
    """Two range reads of the small lease and nudge indexes, never an endpoint's backlog (a
    dead endpoint's may be days of deliveries); as a UNION, so the planner keeps to them."""
    d = Columns(Delivery)
    in_flight, claimable = _conditions()
    return f"""
        SELECT endpoint, count(claimed_until), min(claimed_until), count(*) - count(claimed_until)
        FROM (
            SELECT {d.endpoint} AS endpoint, {d.claimed_until} AS claimed_until FROM {d.table}
            WHERE {in_flight} AND {d.endpoint} = ANY(%(ids)s)
            UNION ALL
            SELECT {d.endpoint}, NULL FROM {d.table}
            WHERE {d.enqueued_until} > %(now)s AND {claimable} AND {d.endpoint} = ANY(%(ids)s)
        ) AS load
        GROUP BY endpoint
    """


def loads(endpoint_ids: list[str], now) -> dict[str, Load]:
    with connection.cursor() as cursor:
        cursor.execute(_loads_sql(), {"now": now, "pending": PENDING, "ids": endpoint_ids})
        return {endpoint_id: Load(*row) for endpoint_id, *row in cursor.fetchall()}


@cache
def _record_sql(insert: str, health: str, bucket: str) -> str:
    """The delivery's next state, only while the caller still holds its lease (`mine`); then
    the attempt (`insert`, a SELECT from `mine`, so nothing is written without it), the
    endpoint's health counters (`health`, `bucket`: webhooks/health.py) and, the first time
    one of the event's deliveries dies, the event's dead letter (PostgreSQL runs a writing
    WITH whether or not the query reads it). Returns whether it was stored and the endpoint's
    failure streak."""
    d, e = Columns(Delivery), Columns(Event)
    return f"""
        WITH mine AS (
            UPDATE {d.table} SET {d.status} = %s, {d.attempt_count} = %s,
                {d.next_attempt_at} = %s, {d.claimed_until} = NULL, {d.enqueued_until} = NULL
            WHERE {d.id} = %s AND {d.claimed_until} = %s
            RETURNING 1
        ),
        attempt AS ({insert}),
        health AS ({health}),
        bucket AS ({bucket}),
        dead AS (
            UPDATE {e.table} SET {e.dead_lettered_at} = %s
            WHERE {e.id} = %s AND %s AND {e.dead_lettered_at} IS NULL
                AND EXISTS (SELECT FROM mine)
        )
        SELECT (SELECT count(*) FROM mine), health.*
        FROM (SELECT 1) AS one LEFT JOIN health ON true
    """


def record(attempt: Attempt, status: str, now, lease) -> Recorded:
    delivery = [status, attempt.attempt, attempt.next_retry_at, attempt.delivery_id, lease]
    insert, params = insert_sql(Attempt, [instance_values(attempt)], select_tail="FROM mine")
    dies = status == Delivery.Status.DEAD_LETTERED
    (health, health_params), (bucket, bucket_params) = counted(attempt, dies, "FROM mine")
    sql = _record_sql(insert, health, bucket)
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [*delivery, *params, *health_params, *bucket_params, now, attempt.event_id, dies],
        )
        stored, *streak = cursor.fetchone()
    if stored:
        mark_stored(attempt)
    return Recorded(bool(stored), streak_of(streak))
