"""An endpoint's delivery health: the counters the attempt's record statement keeps up to date
(webhooks/statements), and their reading for the API and the admin.

Cheap by construction: every attempt upserts one `EndpointHealth` row (the failure streak,
the last success and failure) and one `HealthBucket` row (its 5-minute slice of attempts), on
PostgreSQL as two more parts of the one statement that records the attempt (no extra round
trip). Reading an endpoint's health is its row plus at most a day of its slices (288 rows,
through their unique index), never a scan of its attempts."""

import datetime
from functools import cache

from django.db import connection
from django.db.models import Q, Sum
from django.utils import timezone

from api.renderers import format_timestamp
from infra.rows import Columns, insert_sql
from webhooks.models import Attempt, EndpointHealth, HealthBucket
from webhooks.streaks import Streak

BUCKET = datetime.timedelta(minutes=5)
WINDOWS = {"last_hour": datetime.timedelta(hours=1), "last_day": datetime.timedelta(days=1)}
ERROR_KEPT = 500  # characters of the last failure's error kept on the health row
_EPOCH = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)


def bucket_start(at: datetime.datetime) -> datetime.datetime:
    return at - (at - _EPOCH) % BUCKET


@cache
def _health_conflict(delivered: bool) -> str:
    """A delivered attempt ends the streak (and its warning); a failed one adds to it, keeping
    when it began. Returns the streak as it now stands."""
    col, old = Columns(EndpointHealth), Columns(EndpointHealth, EndpointHealth._meta.db_table)
    new = Columns(EndpointHealth, "excluded")
    if delivered:
        changes = [
            f"{col.consecutive_failures} = 0",
            f"{col.failing_since} = NULL",
            f"{col.warned_at} = NULL",
            f"{col.last_success_at} = {new.last_success_at}",
        ]
    else:
        changes = [
            f"{col.consecutive_failures} = {old.consecutive_failures} + 1",
            f"{col.failing_since} = COALESCE({old.failing_since}, {new.failing_since})",
            f"{col.last_failure_at} = {new.last_failure_at}",
            f"{col.last_failure_http_status} = {new.last_failure_http_status}",
            f"{col.last_failure_error} = {new.last_failure_error}",
            f"{col.undigested_dead_letters} = "
            f"{old.undigested_dead_letters} + {new.undigested_dead_letters}",
        ]
    return (
        f"ON CONFLICT ({col.endpoint}) DO UPDATE SET {', '.join(changes)}"
        f" RETURNING {col.consecutive_failures}, {col.failing_since}, {col.warned_at}"
    )


@cache
def _bucket_conflict() -> str:
    col, old = Columns(HealthBucket), Columns(HealthBucket, HealthBucket._meta.db_table)
    new = Columns(HealthBucket, "excluded")
    return (
        f"ON CONFLICT ({col.endpoint}, {col.starts}) DO UPDATE SET"
        f" {col.delivered} = {old.delivered} + {new.delivered},"
        f" {col.failed} = {old.failed} + {new.failed}"
    )


def counted(attempt: Attempt, dies: bool, select_tail: str) -> list[tuple[str, list]]:
    """The two upserts that count `attempt` (its delivery dead-lettered by it if `dies`), each
    (sql, params), their rows selected with `select_tail` (e.g. FROM the CTE that says the
    attempt is stored). The first returns the endpoint's `Streak`."""
    delivered = attempt.status == Attempt.Status.DELIVERED
    at = attempt.attempted_at
    health = {
        "endpoint_id": attempt.endpoint_id,
        "consecutive_failures": 0 if delivered else 1,
        "failing_since": None if delivered else at,
        "last_success_at": at if delivered else None,
        "last_failure_at": None if delivered else at,
        "last_failure_http_status": None if delivered else attempt.http_status,
        "last_failure_error": None if delivered else (attempt.error or "")[:ERROR_KEPT],
        "undigested_dead_letters": int(dies),
    }
    bucket = {
        "endpoint_id": attempt.endpoint_id,
        "starts": bucket_start(at),
        "delivered": int(delivered),
        "failed": int(not delivered),
    }
    return [
        insert_sql(
            EndpointHealth, [health], select_tail=select_tail, suffix=_health_conflict(delivered)
        ),
        insert_sql(HealthBucket, [bucket], select_tail=select_tail, suffix=_bucket_conflict()),
    ]


def streak_of(row) -> Streak | None:
    """The streak a record statement returned. Its times are read as the ORM would: SQLite
    hands a raw statement's datetimes back naive (stored in the connection's time zone)."""
    if not row or row[0] is None:
        return None
    failures, failing_since, warned_at = row
    return Streak(failures, _aware(failing_since), _aware(warned_at))


def _aware(moment: datetime.datetime | None) -> datetime.datetime | None:
    if moment is None or timezone.is_aware(moment):
        return moment
    return timezone.make_aware(moment, connection.timezone)


def _rates(endpoint_ids: list[str], now) -> dict[str, dict]:
    """{endpoint id: {window: {attempts, delivered, success_rate}}} from the slices."""
    sums = {}
    for name, span in WINDOWS.items():
        recent = Q(starts__gt=now - span)
        sums[f"{name}_delivered"] = Sum("delivered", filter=recent)
        sums[f"{name}_failed"] = Sum("failed", filter=recent)
    rows = (
        HealthBucket.objects.filter(
            endpoint_id__in=endpoint_ids, starts__gt=now - max(WINDOWS.values())
        )
        .values("endpoint_id")
        .annotate(**sums)
    )
    by_endpoint = {row["endpoint_id"]: row for row in rows}
    return {
        endpoint_id: {name: _rate(by_endpoint.get(endpoint_id, {}), name) for name in WINDOWS}
        for endpoint_id in endpoint_ids
    }


def _rate(row: dict, window: str) -> dict:
    delivered = row.get(f"{window}_delivered") or 0
    attempts = delivered + (row.get(f"{window}_failed") or 0)
    rate = round(delivered / attempts, 4) if attempts else None
    return {"attempts": attempts, "delivered": delivered, "success_rate": rate}


def health_of(endpoints: list, now) -> dict[str, dict]:
    """{endpoint id: its `health` member} for these endpoints, in two queries."""
    ids = [endpoint.id for endpoint in endpoints]
    rows = {h.endpoint_id: h for h in EndpointHealth.objects.filter(endpoint_id__in=ids)}
    rates = _rates(ids, now)
    return {
        endpoint.id: _health_dict(endpoint, rows.get(endpoint.id), rates[endpoint.id])
        for endpoint in endpoints
    }


def _health_dict(endpoint, row: EndpointHealth | None, rates: dict) -> dict:
    row = row or EndpointHealth(endpoint_id=endpoint.id)
    return {
        **rates,
        "consecutive_failures": row.consecutive_failures,
        "failing_since": format_timestamp(row.failing_since),
        "last_success_at": format_timestamp(row.last_success_at),
        "last_failure_at": format_timestamp(row.last_failure_at),
        "last_failure_http_status": row.last_failure_http_status,
        "last_failure_error": row.last_failure_error,
        "warned_at": format_timestamp(row.warned_at),
        "disabled_at": format_timestamp(endpoint.disabled_at),
    }


def buckets_purge(now) -> int:
    """Beat (with the event purge): slices older than the longest window."""
    deleted, _ = HealthBucket.objects.filter(starts__lt=now - 2 * max(WINDOWS.values())).delete()
    return deleted
