"""Benchmark: bytes stored per payment, table by table (docs/data.md "Size").

Fills a scratch PostgreSQL database (BENCH_DATA_DATABASE_URL, dropped and recreated) through
the service itself, in-process: one merchant with one webhook endpoint subscribed to every
event, then --payments card payments in test mode (automatic capture, a customer and
metadata, each with an Idempotency-Key), a quarter of them refunded in part. Each delivery
gets one successful attempt, as the webhooks worker would record it (written directly: no
receiver is needed to count bytes). Reports, per table, its size with its indexes and TOAST
divided by the payments made, then the total; the floor is the payments table alone.

    .venv/bin/python bench/bench_data_size.py [--payments 2000]
"""

import argparse
import os
import sys
import time
from pathlib import Path

import psycopg
from bench_payments import recreate_database  # noqa: E402  (run as a script: bench/ is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/svc_data_bench"
TABLES = [
    "payments_payment",
    "payments_token",
    "payments_operation",
    "refunds_refund",
    "events_event",
    "webhooks_delivery",
    "webhooks_attempt",
    "api_idempotencyrecord",
]


def fill(payments: int) -> None:
    from django.utils import timezone
    from rest_framework.test import APIClient

    from accounts.services import merchant_create
    from webhooks.models import Attempt, Delivery
    from webhooks.services import endpoint_create

    made = merchant_create(name="Bench", email="bench@example.test")
    endpoint_create(merchant=made.merchant, livemode=False, url="https://127.0.0.1:9/hook")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {made.keys['test']['secret'].secret}")
    for n in range(payments):
        token = api.post(
            "/v1/sandbox/tokens",
            {"number": "4242424242424242", "exp_month": 12, "exp_year": 2099, "cvc": "123"},
            format="json",
        ).json()["id"]
        body = {
            "amount": 1000 + n,
            "currency": "eur",
            "reference": f"order-{n}",
            "description": "Two tickets",
            "payment_method": {"type": "card", "token": token},
            "customer": {
                "id": f"cus_01J{n:023d}",
                "email": f"customer{n}@example.test",
                "name": "Ann Example",
                "billing_address": {"country": "EE", "city": "Tartu", "line1": "Rüütli 1"},
            },
            "metadata": {"order_id": str(n), "channel": "web"},
        }
        made = api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY=f"pay-{n}")
        assert made.status_code == 201, made.content
        if n % 4 == 0:
            refund = api.post(
                f"/v1/payments/{made.json()['id']}/refunds",
                {"amount": 500},
                format="json",
                HTTP_IDEMPOTENCY_KEY=f"refund-{n}",
            )
            assert refund.status_code == 201, refund.content
    now = timezone.now()
    for delivery in Delivery.objects.all():
        Attempt.objects.create(
            delivery=delivery,
            event_id=delivery.event_id,
            endpoint_id=delivery.endpoint_id,
            attempt=1,
            status=Attempt.Status.DELIVERED,
            http_status=200,
            response_body="ok",
            duration_ms=40,
            attempted_at=now,
        )
    Delivery.objects.update(status=Delivery.Status.DELIVERED, next_attempt_at=None)


def report(url: str, payments: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        sizes = {
            table: conn.execute("SELECT pg_total_relation_size(%s)", [table]).fetchone()[0]
            for table in TABLES
        }
    floor = sizes["payments_payment"] / payments
    print(f"{'table':<24} {'bytes/payment':>14} {'ratio to payments':>18}")
    for table, size in sizes.items():
        print(f"{table:<24} {size / payments:>14.0f} {size / payments / floor:>18.2f}")
    total = sum(sizes.values()) / payments
    print(f"{'total':<24} {total:>14.0f} {total / floor:>18.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--payments", type=int, default=2000)
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATA_DATABASE_URL", DEFAULT_URL)
    recreate_database(url)
    os.environ.update(
        DATABASE_URL=url,
        DEBUG="true",
        DJANGO_SETTINGS_MODULE="config.settings",
        WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8",
        LOG_LEVEL="WARNING",
        API_RATE_LIMIT_TEST_RATE="100000",
        API_RATE_LIMIT_TEST_BURST="100000",
    )
    os.environ.pop("REDIS_URL", None)  # in-process: no broker needed, nudges go nowhere
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    started = time.monotonic()
    fill(args.payments)
    print(f"filled {args.payments} payments in {time.monotonic() - started:.0f} s")
    report(url, args.payments)


if __name__ == "__main__":
    main()
