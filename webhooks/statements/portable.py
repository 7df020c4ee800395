"""The delivery statements through the ORM (interface: webhooks/statements/__init__.py): the
embedded SQLite has no UPDATE inside WITH, no FOR UPDATE SKIP LOCKED, and gives min() of a
timestamp as text, which the ORM converts. Without SKIP LOCKED two threads may pick the same
next delivery; the conditional update lets one of them have it, and the other's drain stops
(the beat tick carries on)."""

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Min, Q

from events.models import Event
from webhooks.bulkhead import (
    MAX_IN_FLIGHT_PER_ENDPOINT,
    Load,
    Recorded,
)
from webhooks.health import counted, streak_of
from webhooks.models import Attempt, Delivery


def claim(delivery_id: str, now, lease) -> Delivery | None:
    if not Delivery.objects.claimable(now).filter(pk=delivery_id).update(claimed_until=lease):
        return None
    return Delivery.objects.select_related("event", "endpoint").get(pk=delivery_id)


def claim_next(now, lease, livemode: bool) -> Delivery | None:
    leased = Delivery.objects.in_flight(now).filter(endpoint__livemode=livemode)
    full_endpoints = (
        leased.values("endpoint_id")
        .annotate(n=Count("pk"))
        .filter(n__gte=MAX_IN_FLIGHT_PER_ENDPOINT)
        .values("endpoint_id")
    )
    full_accounts = (
        leased.values("endpoint__merchant_id")
        .annotate(n=Count("pk"))
        .filter(n__gte=settings.WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT)
        .values("endpoint__merchant_id")
    )
    claimable = (
        Delivery.objects.claimable(now)
        .filter(endpoint__livemode=livemode)
        .exclude(endpoint_id__in=full_endpoints)
        .exclude(endpoint__merchant_id__in=full_accounts)
    )
    delivery_id = claimable.order_by("next_attempt_at").values_list("pk", flat=True).first()
    return None if delivery_id is None else claim(delivery_id, now, lease)


def in_flight(delivery: Delivery, now) -> tuple[Load, Load]:
    endpoint = delivery.endpoint
    leased = (
        Delivery.objects.in_flight(now)
        .filter(endpoint__merchant_id=endpoint.merchant_id, endpoint__livemode=endpoint.livemode)
        .exclude(pk=delivery.pk)
    )
    mine = Q(endpoint_id=endpoint.id)
    row = leased.aggregate(
        n=Count("pk", filter=mine),
        oldest=Min("claimed_until", filter=mine),
        account_n=Count("pk"),
        account_oldest=Min("claimed_until"),
    )
    return Load(row["n"], row["oldest"]), Load(row["account_n"], row["account_oldest"])


def loads(endpoint_ids: list[str], now) -> dict[str, Load]:
    leased = Q(claimed_until__gt=now)
    nudged = Delivery.objects.claimable(now).filter(enqueued_until__gt=now)
    rows = (
        (Delivery.objects.in_flight(now) | nudged)
        .filter(endpoint_id__in=endpoint_ids)
        .values("endpoint_id")
        .annotate(
            in_flight=Count("pk", filter=leased),
            oldest_lease=Min("claimed_until", filter=leased),
            nudged=Count("pk", filter=~leased),
        )
    )
    return {row.pop("endpoint_id"): Load(**row) for row in rows}


@transaction.atomic
def record(attempt: Attempt, status: str, now, lease) -> Recorded:
    mine = Delivery.objects.filter(pk=attempt.delivery_id, claimed_until=lease)
    if not mine.update(
        status=status,
        attempt_count=attempt.attempt,
        next_attempt_at=attempt.next_retry_at,
        claimed_until=None,
        enqueued_until=None,
    ):
        return Recorded(stored=False, streak=None)
    attempt.save(force_insert=True)
    dies = status == Delivery.Status.DEAD_LETTERED
    if dies:
        Event.objects.filter(pk=attempt.event_id, dead_lettered_at__isnull=True).update(
            dead_lettered_at=now
        )
    (health, health_params), (bucket, bucket_params) = counted(attempt, dies, "WHERE true")
    with connection.cursor() as cursor:
        cursor.execute(bucket, bucket_params)
        cursor.execute(health, health_params)
        streak = cursor.fetchone()
    return Recorded(stored=True, streak=streak_of(streak))
