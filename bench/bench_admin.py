"""Benchmark: the back office at scale (issue 14, docs/back-office.md "Finding").

Fills a scratch PostgreSQL database (BENCH_ADMIN_DATABASE_URL, dropped and recreated) with
1,000,000 payments and 3,000,000 events by generate_series (not row by row through the ORM),
then times the admin views in-process through Django's test client, logged in as a
superuser: the payments list, a search by last4, a search by reference, a created-date
filter, a payment's page, the events list and an event search by resource. Each figure is the
median and p95 of --repeat requests, reported with its ratio to a floor measured in the same
run (the admin's index page, which reads no payment).

    .venv/bin/python bench/bench_admin.py [--payments 1000000] [--repeat 15]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from bench_payments import recreate_database  # noqa: E402  (run as a script: bench/ is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/svc_admin_bench"

FILL = """
INSERT INTO payments_payment (id, merchant_id, livemode, status, amount, amount_captured,
    amount_refunded, currency, reference, capture_method, method_type, card, method_details,
    customer, customer_details, outcome, metadata, created)
SELECT 'pay_' || lpad(i::text, 26, '0'), %(merchant)s, i %% 2 = 0, 'captured',
    100 + i %% 50000, 100 + i %% 50000, 0, (ARRAY['eur','usd','gbp','jpy'])[1 + i %% 4],
    'order-' || i, 'automatic', 'card',
    jsonb_build_object('brand', 'visa', 'last4', lpad((i %% 10000)::text, 4, '0'),
                       'exp_month', 12, 'exp_year', 2030, 'funding', 'credit'),
    '{}'::jsonb, 'cus_' || (i %% 200000),
    jsonb_build_object('email', 'c' || (i %% 200000) || '@example.test'),
    '{"type": "authorized"}'::jsonb, '{}'::jsonb,
    now() - make_interval(secs => %(payments)s - i)
FROM generate_series(1, %(payments)s) AS i
"""
EVENTS = """
INSERT INTO events_event (id, merchant_id, livemode, type, api_version, resource_id, data,
    created, dispatched_at)
SELECT 'evt_' || lpad((i * 3 + k)::text, 26, '0'), %(merchant)s, i %% 2 = 0,
    (ARRAY['payment.created','payment.authorized','payment.captured'])[k + 1], '2026-01-01',
    'pay_' || lpad(i::text, 26, '0'), '{"object": {}}'::jsonb,
    now() - make_interval(secs => %(payments)s - i), now()
FROM generate_series(1, %(payments)s) AS i, generate_series(0, 2) AS k
"""


def fill(url: str, payments: int) -> str:
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "true"}
    subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO accounts_merchant (id, name, email, transaction_limit, created, pricing)"
            " VALUES ('mch_bench', 'Bench', 'b@example.test', NULL, now(), '{}')"
        )
        started = time.monotonic()
        params = {"merchant": "mch_bench", "payments": payments}
        conn.execute(FILL, params)
        conn.execute(EVENTS, params)
        conn.execute("VACUUM ANALYZE")
        print(
            f"filled {payments} payments, {3 * payments} events in "
            f"{time.monotonic() - started:.0f} s",
            flush=True,
        )
    return "mch_bench"


def measure(client, url: str, repeat: int) -> tuple[float, float]:
    client.get(url)  # warm: templates, connections
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--payments", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--reuse", action="store_true", help="keep the filled database")
    args = parser.parse_args()
    url = os.environ.get("BENCH_ADMIN_DATABASE_URL", DEFAULT_URL)
    if not args.reuse:
        recreate_database(url)
        fill(url, args.payments)
    os.environ.update(DATABASE_URL=url, DEBUG="true", DJANGO_SETTINGS_MODULE="config.settings")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client

    User.objects.filter(username="bench").delete()
    User.objects.create_superuser("bench", "bench@example.test", "a long and unlikely passphrase")
    client = Client()
    client.force_login(User.objects.get(username="bench"))
    middle = f"pay_{args.payments // 2:026d}"
    pages = {
        "floor: admin index": "/admin/",
        "payments list": "/admin/payments/payment/",
        "search by last4": "/admin/payments/payment/?q=4242",
        "search by reference": f"/admin/payments/payment/?q=order-{args.payments // 2}",
        # Filters narrow one merchant (docs/back-office.md "Finding").
        "created today": "/admin/payments/payment/?merchant=mch_bench&created__gte="
        + time.strftime("%Y-%m-%d", time.gmtime())
        + "+00:00:00%2B00:00",
        "status filter": "/admin/payments/payment/?merchant=mch_bench&status__exact=refunded",
        "payment page": f"/admin/payments/payment/{middle}/change/",
        "events list": "/admin/events/event/",
        "event search by resource": f"/admin/events/event/?q={middle}",
    }
    floor = None
    for name, page in pages.items():
        median, p95 = measure(client, page, args.repeat)
        floor = floor or median
        print(f"{name:22} median {median:7.1f} ms  p95 {p95:7.1f} ms  x{median / floor:5.1f} floor")


if __name__ == "__main__":
    main()
