"""Benchmark: recover's read when it is called again within the hour (docs/webhooks.md
"Recover", issue 35).

Fills a scratch PostgreSQL database (BENCH_RECOVER_DATABASE_URL, dropped, recreated and
migrated) with one endpoint whose --deliveries deliveries are dead-lettered over 70 hours,
3 failed attempts each, the last 5 minutes ago, and a recover 10 minutes ago: the worst case,
the endpoint's whole failed backlog re-sent and failed again since. Then times, alternating
in one sitting, recover's page read (`webhooks.recovery.recover_page`) as a first recover
makes it (the floor: no recover in the last hour), as a recover in a loop makes it (bounded:
it reads one page of candidates and requeues none of it), and the read it replaced (the
selector with the hour's filter, taking WEBHOOK_RECOVER_MAX + 1 of what passes it, so
walking every candidate to find that none does). Reports medians in milliseconds and each
as a ratio to the floor.

    .venv/bin/python bench/bench_recover.py [--deliveries 50000] [--repeat 7]
"""

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_payments import recreate_database  # noqa: E402  (run as a script: bench/ is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/svc_recover_bench"


def fill(count: int):
    """The endpoint and its failed backlog, made through the models (ids as the app makes
    them, time-ordered by `created`)."""
    from django.utils import timezone

    from accounts.models import Merchant
    from api.ids import id_floor
    from events.models import Event
    from webhooks.models import Attempt, Delivery, StatusChange, WebhookEndpoint

    now = timezone.now()
    merchant = Merchant.objects.create(name="bench", email="bench@example.test")
    endpoint = WebhookEndpoint.objects.create(
        merchant=merchant, livemode=False, url="https://example.test/h", secret_encrypted="x"
    )
    start = now - datetime.timedelta(hours=70)
    events = []
    for n in range(count):
        created = start + datetime.timedelta(seconds=70 * 3600 * n / count)
        events.append(
            Event(
                id=id_floor("evt", created)[:-8] + f"{n:08d}",
                merchant=merchant,
                livemode=False,
                type="payment.captured",
                api_version="2026-01-01",
                resource_id="pay_bench",
                data={"object": {}},
                created=created,
            )
        )
    Event.objects.bulk_create(events, batch_size=5000)
    deliveries = [
        Delivery(event=e, endpoint=endpoint, status="dead_lettered", attempt_count=3)
        for e in events
    ]
    Delivery.objects.bulk_create(deliveries, batch_size=5000)
    last = now - datetime.timedelta(minutes=5)
    attempts = [
        Attempt(
            delivery=d,
            event_id=d.event_id,
            endpoint=endpoint,
            attempt=number,
            status="failed",
            http_status=500,
            duration_ms=3,
            attempted_at=at,
        )
        for d in deliveries
        for number, at in ((1, d.event.created), (2, d.event.created), (3, last))
    ]
    Attempt.objects.bulk_create(attempts, batch_size=10000)
    recovered = now - datetime.timedelta(minutes=10)
    StatusChange.objects.create(endpoint=endpoint, action="recovered", actor="api", at=recovered)
    return endpoint


def timed_alternating(reads: dict, repeat: int) -> dict:
    """Median milliseconds of each read, the reads taking turns (load shifts hit all alike)."""
    times = {name: [] for name in reads}
    for _ in range(repeat):
        for name, read in reads.items():
            started = time.perf_counter()
            read()
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deliveries", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    url = os.environ.get("BENCH_RECOVER_DATABASE_URL", DEFAULT_URL)
    recreate_database(url)
    os.environ.update(DATABASE_URL=url, DEBUG="true", DJANGO_SETTINGS_MODULE="config.settings")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, check=True)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from webhooks.models import StatusChange
    from webhooks.recovery import first_recent_recover, recover_page
    from webhooks.selectors import recoverable_deliveries

    endpoint = fill(args.deliveries)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    now = timezone.now()
    since, page = now - datetime.timedelta(hours=71), settings.WEBHOOK_RECOVER_MAX
    quiet = first_recent_recover(endpoint, now)
    later = now + datetime.timedelta(hours=2)  # the recover is over an hour old: no filter

    def floor():
        return recover_page(endpoint, since, later, None, page)

    def bounded():
        return recover_page(endpoint, since, now, None, page)

    def unbounded():
        return list(recoverable_deliveries(endpoint, since, now, None, quiet)[: page + 1])

    assert quiet is not None and StatusChange.objects.filter(endpoint=endpoint).count() == 1
    assert len(floor()[0]) == page and bounded()[0] == [] and bounded()[1] and unbounded() == []
    median = timed_alternating(
        {"floor": floor, "bounded": bounded, "unbounded": unbounded}, args.repeat
    )
    print(f"{args.deliveries} failed deliveries of one endpoint, all attempted since a recover")
    print(f"floor, a first recover's page of {page}: {median['floor']:.1f} ms")
    for name, what in (
        ("bounded", "a recover again within the hour, one page read (now)"),
        ("unbounded", "the same, every candidate walked (before)"),
    ):
        ratio = median[name] / median["floor"]
        print(f"{what}: {median[name]:.1f} ms, {ratio:.2f}x the floor")


if __name__ == "__main__":
    main()
