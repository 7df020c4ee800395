"""The webhooks' metrics (docs/observability.md "Metrics").

Attempts, their outcomes and latencies are counted by the process that makes them (a Celery
worker, or the web for simulate-webhook) into the node's multiprocess files. The backlog and
the age of the oldest due delivery are read from PostgreSQL when /metrics is scraped: they are
facts about rows, the same whichever process asks, and two reads of the `delivery_due` partial
index (status pending, on next_attempt_at) give them whatever the table's size. When the last
attempt was made is the newest 5-minute slice of the endpoints' health counters
(webhooks.health), the last entry of the `health_bucket_starts` index.
"""

import datetime

from django.db.models import Max, Min
from django.utils import timezone
from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from infra.metrics import labelled
from webhooks.health import BUCKET
from webhooks.models import Delivery, HealthBucket

ATTEMPTS = Counter(
    "svc_webhook_attempts", "Webhook delivery attempts, by outcome.", ["mode", "outcome"]
)
ATTEMPT_DURATION = Histogram(
    "svc_webhook_attempt_duration_seconds",
    "How long one attempt's POST took (0 when it was not sent: the URL guard or the secret).",
    ["outcome"],
)
DELIVERY_LATENCY = Histogram(
    "svc_webhook_delivery_latency_seconds",
    "From the event's creation to its successful delivery to one endpoint, retries included.",
    ["mode"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 21600, 86400, 259200),
)
DEAD_LETTERS = Counter(
    "svc_webhook_dead_letters", "Deliveries that ran out of retries (dead letters).", ["mode"]
)


def attempt_recorded(delivery: Delivery, outcome, status: str, now: datetime.datetime) -> None:
    """Count one recorded attempt (webhooks.attempts.delivery_record)."""
    mode = "live" if delivery.event.livemode else "test"
    result = "delivered" if outcome.delivered else "failed"
    labelled(ATTEMPTS, mode, result).inc()
    labelled(ATTEMPT_DURATION, result).observe(outcome.duration_ms / 1000)
    if outcome.delivered:
        labelled(DELIVERY_LATENCY, mode).observe((now - delivery.event.created).total_seconds())
    elif status == Delivery.Status.DEAD_LETTERED:
        labelled(DEAD_LETTERS, mode).inc()


def backlog(now: datetime.datetime) -> tuple[int, int, float]:
    """(pending deliveries, due ones, seconds the oldest due one is late)."""
    pending = Delivery.objects.filter(status=Delivery.Status.PENDING)
    return pending.count(), pending.filter(next_attempt_at__lte=now).count(), oldest_due_age(now)


def oldest_due_age(now: datetime.datetime) -> float:
    """Seconds the oldest due delivery is late (0 with none due): /readyz's webhook check."""
    late = Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now)
    oldest = late.aggregate(oldest=Min("next_attempt_at"))["oldest"]
    return (now - oldest).total_seconds() if oldest else 0.0


def last_attempt_age(now: datetime.datetime) -> float | None:
    """Seconds since the 5-minute slice of the newest attempt (delivered or failed, of any
    endpoint) began, so at most BUCKET more than since that attempt; None: none kept."""
    newest = HealthBucket.objects.aggregate(newest=Max("starts"))["newest"]
    return (now - newest).total_seconds() if newest else None


def stalled_for(now: datetime.datetime, max_age: float) -> float:
    """Seconds the oldest due delivery is late if no attempt at all was made meanwhile (no
    worker is taking deliveries), else 0: /readyz's webhook check. An endpoint that fails or
    hangs still makes attempts (each ends within the POST's timeout), so one tenant's dead
    endpoints keep their deliveries late without making this fire (issue 35)."""
    late = oldest_due_age(now)
    if late <= max_age:
        return 0.0  # the usual case: one read
    since = last_attempt_age(now)
    attempted = since is not None and since <= max_age + BUCKET.total_seconds()
    return 0.0 if attempted else late


class BacklogCollector:
    """Read at scrape time; every node reports the same values (aggregate with max())."""

    def describe(self):
        return []

    def collect(self):
        pending, due, age = backlog(timezone.now())
        yield GaugeMetricFamily(
            "svc_webhook_backlog",
            "Pending webhook deliveries (due now or waiting to retry).",
            value=pending,
        )
        yield GaugeMetricFamily(
            "svc_webhook_due", "Webhook deliveries due now and not yet delivered.", value=due
        )
        yield GaugeMetricFamily(
            "svc_webhook_oldest_due_age_seconds",
            "How late the oldest due webhook delivery is (0: none due).",
            value=age,
        )
        since = last_attempt_age(timezone.now())
        yield GaugeMetricFamily(
            "svc_webhook_last_attempt_age_seconds",
            "Seconds since the 5-minute slice of the newest webhook attempt began (-1: none).",
            value=-1 if since is None else since,
        )
