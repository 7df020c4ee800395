"""Benchmark: the API's list reads at scale, a small merchant beside a big one (issues 22 and
26; docs/data.md "Reads at scale").

Fills a scratch PostgreSQL database (BENCH_SCALE_DATABASE_URL, dropped and recreated) by
INSERT ... SELECT generate_series in the service's own tables: a big merchant with 99.5% of
the payments and a small one, both modes (80% live), mixed statuses, currencies and methods,
a year of `created` times with ULID ids made at them (as the service makes them), and the
events of each payment. Then, in-process through Django's test client with a pool of one
connection (so every statement is past psycopg's prepare threshold of 5 before it is timed),
it times each list filter of GET /v1/payments and GET /v1/events for the small and the big
merchant's live key, twice:

- before: the code and schema as they were (plan_cache_mode=auto: generic plans; no status,
  currency, method or type index, the migrations rolled back; no id bounds for `created`);
- generic: the code and schema as they are, with plan_cache_mode=auto (what generic plans
  still do with the new indexes);
- after: as they are (force_custom_plan, the indexes migrated, id bounds).

Each line: the median of --repeat requests after --warm ones, its ratio to the unfiltered
list of the same merchant in the same phase (the floor), and the list query's plan as a
prepared statement past the threshold (EXPLAIN ANALYZE BUFFERS): rows examined and pages.

    make bench-scale                                       # 1M payments
    .venv/bin/python bench/bench_scale.py --payments 10k [--reuse] [--repeat 7]
"""

import argparse
import json
import logging
import os
import re
import statistics
import sys
import time
from pathlib import Path

import psycopg
import scale_reports  # noqa: E402
from bench_payments import recreate_database  # noqa: E402  (run as a script: bench/ is on sys.path)
from psycopg import sql
from scale_fill import fill  # noqa: E402
from scale_reports import (  # noqa: E402
    admin_report,
    beat_report,
    examined,
    first_scan,
    pages_report,
)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/svc_scale_bench"
DAY = 86_400


def queries(now: float, customer: str, resource: str) -> list[tuple[str, str]]:
    """(path, query string); the first of each resource is its floor."""
    return [
        ("/v1/payments", ""),
        ("/v1/payments", "status=pending,requires_action"),
        ("/v1/payments", "status=expired"),
        ("/v1/payments", "status=disputed"),
        ("/v1/payments", "currency=kwd"),
        ("/v1/payments", "currency=eur"),
        ("/v1/payments", "method_type=paypal"),
        ("/v1/payments", "amount[gte]=99900"),
        ("/v1/payments", f"customer={customer}"),
        ("/v1/payments", f"created[gte]={int(now - 61 * DAY)}&created[lte]={int(now - 60 * DAY)}"),
        ("/v1/payments", f"created[lte]={int(now - 80 * DAY)}"),
        ("/v1/payments", "status=captured&currency=gbp"),
        ("/v1/events", ""),
        ("/v1/events", "type=refund.failed"),
        ("/v1/events", "type=payment.expired"),
        ("/v1/events", f"resource={resource}"),
    ]


def api_reads(merchant, now: float) -> list[tuple[str, str]]:
    """(name, path) of the API's reads by id and its other lists, for `merchant`'s live key:
    its oldest objects (the deepest in every index)."""
    from api.models import RequestLogEntry
    from events.models import Event

    payment = merchant.payments.filter(livemode=True).order_by("pk").first()
    refund = merchant.refunds.filter(livemode=True).order_by("pk").first()
    event = Event.objects.filter(merchant=merchant, livemode=True).order_by("pk").first()
    logged = RequestLogEntry.objects.filter(merchant_id=merchant.pk, livemode=True).first()
    window = f"created[gte]={int(now - 21 * DAY)}&created[lte]={int(now - 20 * DAY)}"
    paths = [
        f"/v1/payments/{payment.pk}",
        f"/v1/events/{event.pk}",
        "/v1/webhook-endpoints",
        "/v1/request-logs",
        "/v1/request-logs?status=4xx",
        "/v1/request-logs?path=/v1/payments",
        f"/v1/request-logs?{window}",
        f"/v1/request-logs?idempotency_key={logged.idempotency_key if logged else 'none'}",
        f"/v1/request-logs?request_id={logged.pk if logged else 'req_none'}",
    ]
    if refund:
        paths.append(f"/v1/refunds/{refund.pk}")
    return [(f"{merchant.name:5} {path}", path) for path in paths]


def admin_searches(merchants: dict) -> dict[str, list[str]]:
    """What a support agent types into each changelist's search box, taken from the data:
    the small merchant's oldest payment and what hangs off it, the big merchant's id."""
    from events.models import Event
    from refunds.models import Refund
    from webhooks.models import Delivery

    small, big = merchants["small"], merchants["big"]
    payment = small.payments.order_by("pk").first()
    event = Event.objects.filter(merchant=big).order_by("-pk").first()
    delivery = Delivery.objects.order_by("pk").first()
    refund = Refund.objects.filter(merchant=small).order_by("pk").first()
    email = (payment.customer_details or {}).get("email", "nobody@example.test")
    return {
        "payments_payment": [payment.pk, payment.customer, email, "4242", "120.00", "order-7"],
        "events_event": [event.pk, big.pk, small.pk, payment.pk],
        "webhooks_delivery": [delivery.pk, event.pk, delivery.endpoint_id, payment.pk, small.pk],
        "webhooks_deadletter": [delivery.pk, payment.pk],
        "refunds_refund": [refund.pk, refund.payment_id] if refund else [],
        "accounts_merchant": [small.pk, "small"],
        "accounts_apikey": [big.pk, "big"],
        "webhooks_webhookendpoint": [big.pk],
        "api_requestlogentry": [big.pk],
    }


def size(text: str) -> int:
    text = text.lower().replace("_", "")
    for suffix, factor in (("m", 1_000_000), ("k", 1_000)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * factor)
    return int(text)


def setup_django(url: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=url,
        DEBUG="false",
        DJANGO_SECRET_KEY="bench-scale",
        API_KEY_PEPPER="bench-scale-pepper",
        # One connection: each statement the lists run is past the prepare threshold (5)
        # after --warm requests, as on a web thread that has served a while.
        DATABASE_POOL_MIN="1",
        DATABASE_POOL_MAX="1",
        API_RATE_LIMIT_LIVE_RATE="1000000",
        API_RATE_LIMIT_LIVE_BURST="1000000",
        API_RATE_LIMIT_TEST_RATE="1000000",
        API_RATE_LIMIT_TEST_BURST="1000000",
    )
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    logging.disable(logging.WARNING)  # the request log, a line per request


def plan_mode(mode: str) -> None:
    """The pool's connections from now on run with plan_cache_mode=`mode`; with `auto`, psycopg
    also prepares what a connection runs 5 times, as the settings had it until 2026-11-29
    (since, it prepares only the keyed statements, by primary key: infra/keyed.py)."""
    from django.db import connection

    connection.close_pool()
    options = connection.settings_dict["OPTIONS"]
    options["options"] = f"-c plan_cache_mode={mode}"
    options["prepare_threshold"] = 5 if mode == "auto" else None


def old_payment_list(*, merchant, livemode, filters):
    """payments.selectors.payment_list before 2026-11-25: no id bounds."""
    from payments.models import Payment

    return Payment.objects.filter(merchant=merchant, livemode=livemode, **filters)


def list_query(path: str, params: str, merchant, selectors):
    """The queryset of the list's page, as the view builds it."""
    from django.http import QueryDict

    from payments.serializers import parse_list_filters
    from webhooks import selectors as webhook_selectors

    query = QueryDict(params)
    if path == "/v1/payments":
        filters = parse_list_filters(query)
        queryset = selectors.payment_list(merchant=merchant, livemode=True, filters=filters)
    else:
        queryset = webhook_selectors.events_of(
            merchant, True, type=query.get("type"), resource=query.get("resource")
        )
    return queryset.order_by("-pk")[:26]


def explain(url: str, mode: str, queryset) -> tuple[int, int, str]:
    """The query prepared and run 6 times (past the threshold, as psycopg does), then
    EXPLAIN ANALYZE BUFFERS of a 7th run -> (rows examined, pages, plan's first scan)."""
    text, params = queryset.query.get_compiler("default").as_sql()
    parts = text.split("%s")
    text = "".join(p + (f"${n + 1}" if n < len(params) else "") for n, p in enumerate(parts))
    options = f"-c plan_cache_mode={mode}"
    with psycopg.connect(url, autocommit=True, options=options, prepare_threshold=None) as conn:
        args = ", ".join(sql.Literal(p).as_string(conn) for p in params)
        execute = f"EXECUTE q({args})" if params else "EXECUTE q"
        conn.execute(f"PREPARE q AS {text}")
        for _ in range(6):
            conn.execute(execute)
        [[[plan]]] = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {execute}").fetchall()
        [[generic]] = conn.execute(
            "SELECT generic_plans FROM pg_prepared_statements WHERE name = 'q'"
        ).fetchall()
    top = plan["Plan"]
    pages = top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0)
    return examined(top), pages, ("generic: " if generic else "") + first_scan(top)


def timed(client, url: str, warm: int, repeat: int) -> float:
    for _ in range(warm):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content[:200])
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        client.get(url)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def run_phase(name: str, args, url: str, merchants: dict, clients: dict, cases) -> list[dict]:
    from payments import selectors

    mode = "force_custom_plan" if name == "after" else "auto"
    plan_mode(mode)
    results = []
    for path, params in cases:
        for who in ("big", "small"):  # the big merchant's requests shape a generic plan
            target = f"{path}?{params}" if params else path
            median = timed(clients[who], target, args.warm, args.repeat)
            queryset = list_query(path, params, merchants[who], selectors)
            rows, pages, scan = explain(url, mode, queryset)
            results.append(
                {
                    "phase": name,
                    "merchant": who,
                    "query": target,
                    "ms": round(median, 2),
                    "rows_examined": rows,
                    "pages": pages,
                    "scan": scan,
                }
            )
    floors = {(r["merchant"], r["query"]): r["ms"] for r in results if "?" not in r["query"]}
    for result in results:
        floor = floors[(result["merchant"], result["query"].split("?")[0])]
        result["x_floor"] = round(result["ms"] / floor, 1)
        print(
            f"{name:7} {result['merchant']:5} {result['query'][:62]:62} {result['ms']:8.1f} ms"
            f" x{result['x_floor']:6.1f}  rows {result['rows_examined']:>9,}"
            f"  pages {result['pages']:>7,}  {result['scan']}",
            flush=True,
        )
    return results


def plan_cost(args, merchant) -> None:
    """What force_custom_plan costs where nothing is skewed: POST /v1/payments (test mode, a
    fresh sandbox token each, only the POST timed) and the merchant's unfiltered list, on
    connections with each mode in turn, --rounds rounds (the load of a shared machine drifts;
    alternating keeps it the same for both)."""
    from django.test import Client

    from accounts.services import api_key_issue

    key = api_key_issue(merchant=merchant, kind="secret", livemode=False).secret
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2099, "cvc": "123"}
    body = {"amount": 1000, "currency": "eur", "reference": "bench", "payment_method": {}}
    figures = {}
    for _ in range(args.rounds):
        for mode in ("auto", "force_custom_plan"):
            plan_mode(mode)
            times = []
            for n in range(args.warm + args.repeat * 3):
                token = client.post("/v1/sandbox/tokens", card, content_type="application/json")
                body["payment_method"] = {"type": "card", "token": token.json()["id"]}
                started = time.perf_counter()
                response = client.post("/v1/payments", body, content_type="application/json")
                if n >= args.warm:
                    times.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 201, response.content[:200]
            figures.setdefault(("POST /v1/payments", mode), []).append(statistics.median(times))
            listed = timed(client, "/v1/payments", args.warm, args.repeat * 3)
            figures.setdefault(("GET /v1/payments", mode), []).append(listed)
    for request in ("POST /v1/payments", "GET /v1/payments"):
        auto, custom = (
            statistics.median(figures[(request, m)]) for m in ("auto", "force_custom_plan")
        )
        print(
            f"plan cost {request:18} auto {auto:6.1f} ms  force_custom_plan {custom:6.1f} ms"
            f"  ratio {custom / auto:4.2f} (medians of {args.rounds} alternating rounds)"
        )


def migrate(*targets: str) -> float:
    from django.core.management import call_command

    started = time.monotonic()
    for target in targets:
        call_command("migrate", *target.split(), verbosity=0)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--payments", type=size, default=1_000_000, help="10k, 100k, 1M, ...")
    parser.add_argument("--reuse", action="store_true", help="keep the filled database")
    parser.add_argument("--warm", type=int, default=6, help="requests before timing")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3, help="of the plan-cost A/B; 0: none")
    parser.add_argument("--fill-only", action="store_true", help="fill, report nothing")
    parser.add_argument(
        "--only", default="api,reads,admin,beat", help="of api (lists), reads, admin, beat"
    )
    parser.add_argument("--phases", default="generic,after", help="of the api report")
    parser.add_argument("--pages", default="", help="only the pages and tasks matching this")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    url = os.environ.get("BENCH_SCALE_DATABASE_URL", DEFAULT_URL)
    scale_reports.ONLY = re.compile(args.pages)
    if not args.reuse:
        recreate_database(url)
    setup_django(url)
    from django.test import Client

    from accounts.models import Merchant
    from accounts.services import api_key_issue, merchant_create
    from payments import selectors

    print(f"migrate (CREATE INDEX CONCURRENTLY where new): {migrate(''):.1f} s", flush=True)
    if not args.reuse:
        small = merchant_create(name="small", email="small@example.test").merchant
        big = merchant_create(name="big", email="big@example.test").merchant
        fill(url, args.payments, small.pk, big.pk)
    if args.fill_only:
        return
    merchants = {name: Merchant.objects.get(name=name) for name in ("small", "big")}
    clients = {}
    for name, merchant in merchants.items():
        key = api_key_issue(merchant=merchant, kind="secret", livemode=True)
        clients[name] = Client(HTTP_AUTHORIZATION=f"Bearer {key.secret}")
    oldest = (
        selectors.payment_list(merchant=merchants["small"], livemode=True, filters={})
        .order_by("pk")
        .first()
    )
    cases = queries(time.time(), oldest.customer, oldest.pk)

    results = []
    if "api" in args.only:
        for phase in args.phases.split(","):
            results += run_phase(phase, args, url, merchants, clients, cases)
    if args.rounds and "api" in args.only:
        plan_cost(args, merchants["small"])
    if "reads" in args.only:
        for who in ("big", "small"):
            reads = api_reads(merchants[who], time.time())
            results += pages_report("api", url, clients[who], reads, args.repeat)
    if "admin" in args.only:
        ids = [merchants[who].pk for who in ("big", "small")]
        results += admin_report(url, admin_searches(merchants), ids, args.repeat)
    if "beat" in args.only:
        results += beat_report(url, seconds=0.001)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
