"""Benchmark: retention's purge at volume (docs/data.md "Retention").

Fills a scratch PostgreSQL database (BENCH_RETENTION_DATABASE_URL, dropped and recreated) by
generate_series with --events events, half of them past the retention period, each with one
delivered delivery and one attempt, then runs the purge (webhooks.retention.events_purge) as
beat would, run after run, until nothing is left to purge. Reports the rows deleted a second,
the longest batch (its transaction is all a purge ever holds), and the events left, which
must be exactly the young half. The floor: a primary-key read of one young event.

    .venv/bin/python bench/bench_retention.py [--events 1000000]

With --on URL, on a database filled already (bench_scale's, at 10M payments) and left as it
is but for what one beat run purges: reads (an event by id, a merchant's newest page of
events) timed with no purge running, then while one beat run purges beside them, in another
connection: the purge's cost to requests.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import psycopg
from bench_payments import recreate_database  # noqa: E402  (run as a script: bench/ is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/svc_retention_bench"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

# Ids are ULIDs whose first ten characters encode the creation millisecond: made here from
# `created` in SQL, so the old half sorts before the young half as real ids do.
ULID_TIME = f"""
CREATE FUNCTION bench_ulid(ts timestamptz, n bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT string_agg(substr('{CROCKFORD}',
           ((floor(extract(epoch FROM ts) * 1000)::bigint >> (5 * (9 - k))) & 31)::int + 1, 1),
           '' ORDER BY k) || lpad(n::text, 16, '0')
  FROM generate_series(0, 9) AS k
$$
"""
FILL = """
INSERT INTO events_event (id, merchant_id, livemode, type, api_version, resource_id, data,
    created, dispatched_at)
SELECT 'evt_' || bench_ulid(t, i), 'mch_bench', false, 'payment.captured', '2026-08-19',
    'pay_' || i, '{"object": {"id": "pay"}}'::jsonb, t, t
FROM (SELECT i, now() - make_interval(days => 60) * (%(events)s - i) / %(events)s AS t
      FROM generate_series(1, %(events)s) AS i) AS made;
INSERT INTO webhooks_delivery (id, event_id, endpoint_id, status, attempt_count, created)
SELECT 'whd_' || substr(id, 5), id, 'whe_bench', 'delivered', 1, created FROM events_event;
INSERT INTO webhooks_attempt (id, delivery_id, event_id, endpoint_id, attempt, status,
    http_status, response_body, duration_ms, attempted_at)
SELECT 'wha_' || substr(id, 5), 'whd_' || substr(id, 5), id, 'whe_bench', 1, 'delivered', 200,
    'ok', 40, created FROM events_event;
"""


def fill(url: str, events: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO accounts_merchant (id, name, email, transaction_limit, created, pricing)"
            " VALUES ('mch_bench', 'Bench', 'b@example.test', NULL, now(), '{}')"
        )
        conn.execute(
            "INSERT INTO webhooks_webhookendpoint (id, merchant_id, livemode, url,"
            " enabled_events, secret_encrypted, secret_last4, created) VALUES ('whe_bench',"
            " 'mch_bench', false, 'https://example.test/', '[\"*\"]', 'x', 'abcd', now())"
        )
        conn.execute(ULID_TIME)
        started = time.monotonic()
        for statement in FILL.split(";")[:-1]:
            conn.execute(statement, {"events": events})
        conn.execute("VACUUM ANALYZE")
        print(
            f"filled {events} events, deliveries and attempts in "
            f"{time.monotonic() - started:.0f} s",
            flush=True,
        )


def purge_beside_reads() -> None:
    """One beat run of the purge in a thread while reads are timed; the same reads first
    with nothing beside them (the floor)."""
    import statistics
    import threading

    from django.db import connection

    from events.models import Event
    from webhooks.retention import events_purge

    newest = Event.objects.order_by("-pk").first()
    reads = [
        lambda: Event.objects.get(pk=newest.pk),
        lambda: list(
            Event.objects.filter(merchant_id=newest.merchant_id, livemode=True).order_by("-pk")[:26]
        ),  # fmt: skip
    ]

    def timed_reads(until) -> list[float]:
        times = []
        while until():
            times += [_timed(read) * 1000 for read in reads]
        return times

    started = time.monotonic()
    alone = timed_reads(lambda: time.monotonic() - started < 10)
    done = {}

    def purge():
        began = time.perf_counter()
        done["events"] = events_purge()
        done["seconds"] = time.perf_counter() - began
        connection.close()

    purging = threading.Thread(target=purge)
    purging.start()
    beside = timed_reads(purging.is_alive)
    for name, times in (("alone", alone), ("beside the purge", beside)):
        median, p99 = statistics.median(times), statistics.quantiles(times, n=100)[98]
        print(f"reads {name}: {len(times)}, median {median:.2f} ms, p99 {p99:.2f} ms")
    print(
        f"one beat run purged {done['events']} events (+ deliveries, attempts) in "
        f"{done['seconds']:.1f} s: {done['events'] / done['seconds']:.0f} events/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--on", help="a database filled already: purge beside timed reads")
    args = parser.parse_args()
    url = args.on or os.environ.get("BENCH_RETENTION_DATABASE_URL", DEFAULT_URL)
    if not args.on:
        recreate_database(url)
    os.environ.update(
        DATABASE_URL=url,
        DEBUG="true",
        DJANGO_SETTINGS_MODULE="config.settings",
        LOG_LEVEL="WARNING",
        EVENT_RETENTION_DAYS="30",
    )
    os.environ.pop("REDIS_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    if args.on:
        purge_beside_reads()
        return
    call_command("migrate", verbosity=0)
    fill(url, args.events)
    from django.db import connection

    from events.models import Event
    from infra.retention import BATCH_SIZE
    from webhooks.retention import events_purge

    young = Event.objects.order_by("-pk").first().pk
    floor = min(_timed(lambda: Event.objects.get(pk=young)) for _ in range(50))
    runs = []  # (seconds, events deleted) per beat run
    while not runs or runs[-1][1]:
        started = time.perf_counter()
        done = events_purge()
        runs.append((time.perf_counter() - started, done))
    elapsed, deleted = sum(r[0] for r in runs), sum(r[1] for r in runs)
    batch = max(seconds / -(-done // BATCH_SIZE) for seconds, done in runs if done)
    left = Event.objects.count()
    connection.close()
    print(
        f"purged {deleted} events (+ their deliveries and attempts) in {elapsed:.1f} s over "
        f"{len(runs)} beat runs: {deleted / elapsed:.0f} events/s"
    )
    print(
        f"a batch of {BATCH_SIZE} (one transaction): {batch * 1000:.0f} ms at most (mean of "
        f"its run); floor (one event by id): {floor * 1000:.2f} ms, ratio {batch / floor:.0f}"
    )
    print(f"events left: {left} (the young half: {args.events - deleted})")


def _timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
