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
import statistics
import sys
import time
from pathlib import Path

import psycopg
from bench_payments import recreate_database  # noqa: E402  (run as a script: bench/ is on sys.path)
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/svc_scale_bench"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
SMALL_EVERY = 200  # one payment in 200 is the small merchant's
DAY_MS = 86_400_000


def _chars(value: str, bits: list[int]) -> str:
    """SQL: the Crockford characters of `value` (a bigint expression) at these bit shifts."""
    return " || ".join(f"substr('{CROCKFORD}', (({value} >> {b}) & 31)::int + 1, 1)" for b in bits)


# A ULID made at `ms`, unique by the row number `i` (< 2^40) in its random part.
ULID = (
    _chars("ms", [5 * k for k in range(9, -1, -1)])
    + " || '00000000' || "
    + _chars("i", [5 * k for k in range(7, -1, -1)])
)
PAYMENTS = f"""
INSERT INTO payments_payment (id, merchant_id, livemode, status, amount, amount_captured,
    amount_refunded, currency, reference, capture_method, method_type, card, method_details,
    customer, outcome, metadata, created, due_at)
SELECT 'pay_' || {ULID}, CASE WHEN i %% {SMALL_EVERY} = 0 THEN %(small)s ELSE %(big)s END,
    (i / 3) %% 5 <> 0, status, amount, CASE WHEN status IN ('captured', 'refunded',
    'partially_refunded') THEN amount ELSE 0 END, 0, currency, 'order-' || i, 'automatic',
    method, CASE WHEN method IN ('card', 'apple_pay', 'google_pay') THEN jsonb_build_object(
    'brand', 'visa', 'last4', lpad((i %% 10000)::text, 4, '0'), 'bin', '424242', 'exp_month',
    12, 'exp_year', 2099, 'funding', 'credit') END, '{{}}'::jsonb,
    'cus_' || lpad((i %% 50000)::text, 26, '0'),
    '{{"response_code": "00", "decline_code": null, "risk_score": 12}}'::jsonb, '{{}}'::jsonb,
    to_timestamp(ms / 1000.0), CASE WHEN status IN ('pending', 'requires_action',
    'authorized', 'processing') THEN now() + interval '30 days' END
FROM (
    SELECT i, ms, 100 + (i * 7919) %% 100000 AS amount,
        CASE WHEN r2 < .60 THEN 'captured' WHEN r2 < .64 THEN 'refunded'
             WHEN r2 < .66 THEN 'partially_refunded' WHEN r2 < .70 THEN 'authorized'
             WHEN r2 < .78 THEN 'declined' WHEN r2 < .80 THEN 'failed'
             WHEN r2 < .83 THEN 'canceled' WHEN r2 < .90 THEN 'expired'
             WHEN r2 < .94 THEN 'pending' WHEN r2 < .97 THEN 'requires_action'
             ELSE 'processing' END AS status,
        CASE WHEN r3 < .5 THEN 'eur' WHEN r3 < .8 THEN 'usd' WHEN r3 < .95 THEN 'gbp'
             WHEN r3 < .999 THEN 'jpy' ELSE 'kwd' END AS currency,
        CASE WHEN r4 < .85 THEN 'card' WHEN r4 < .90 THEN 'apple_pay'
             WHEN r4 < .94 THEN 'google_pay' WHEN r4 < .97 THEN 'ideal'
             ELSE 'paypal' END AS method
    FROM (
        SELECT i, (extract(epoch FROM now()) * 1000)::bigint
                  - (random() * 365 * {DAY_MS})::bigint AS ms,
            random() AS r2, random() AS r3, random() AS r4
        FROM generate_series(1, %(payments)s::bigint) AS i
    ) AS drawn
) AS payment
"""
# Each payment's events: payment.created, then the one of the status it is in (none for
# pending); refund.failed has none at all (a type with no rows).
EVENTS = """
INSERT INTO events_event (id, merchant_id, livemode, type, api_version, resource_id, data,
    created, dispatched_at)
SELECT 'evt_' || substr(p.id, 5, 10) || k || substr(p.id, 16, 15), p.merchant_id, p.livemode,
    CASE WHEN k = 0 THEN 'payment.created'
         WHEN p.status IN ('refunded', 'partially_refunded') THEN 'refund.succeeded'
         ELSE 'payment.' || p.status END,
    '2026-01-01', p.id,
    jsonb_build_object('object', jsonb_build_object('id', p.id, 'object', 'payment',
        'status', p.status, 'amount', p.amount, 'currency', p.currency),
        'previous_attributes', NULL),
    p.created, p.created
FROM payments_payment p, generate_series(0, 1) AS k
WHERE k = 0 OR p.status <> 'pending'
"""

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


def size(text: str) -> int:
    text = text.lower().replace("_", "")
    for suffix, factor in (("m", 1_000_000), ("k", 1_000)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * factor)
    return int(text)


def fill(url: str, payments: int, small: str, big: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        started = time.monotonic()
        conn.execute(PAYMENTS, {"payments": payments, "small": small, "big": big})
        conn.execute(EVENTS)
        conn.execute("VACUUM ANALYZE payments_payment")
        conn.execute("VACUUM ANALYZE events_event")
        events = conn.execute("SELECT count(*) FROM events_event").fetchone()[0]
    print(f"filled {payments:,} payments, {events:,} events in {time.monotonic() - started:.0f} s")


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
    """The pool's connections from now on run with plan_cache_mode=`mode`."""
    from django.db import connection

    connection.close_pool()
    connection.settings_dict["OPTIONS"]["options"] = f"-c plan_cache_mode={mode}"


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


def examined(node: dict) -> int:
    """Rows a plan read: what each scan returned plus what its filters threw away."""
    rows = 0
    if "Scan" in node["Node Type"]:
        kept = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
        rows += (kept + node.get("Rows Removed by Index Recheck", 0)) * node["Actual Loops"]
    return rows + sum(examined(child) for child in node.get("Plans", []))


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


def first_scan(node: dict) -> str:
    if "Scan" in node["Node Type"]:
        return f"{node['Node Type']} {node.get('Index Name', '')}".strip()
    return next((first_scan(child) for child in node.get("Plans", [])), "")


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
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    url = os.environ.get("BENCH_SCALE_DATABASE_URL", DEFAULT_URL)
    if not args.reuse:
        recreate_database(url)
    setup_django(url)
    from django.test import Client

    from accounts.models import Merchant
    from accounts.services import api_key_issue, merchant_create
    from payments import selectors

    migrate("")
    if not args.reuse:
        small = merchant_create(name="small", email="small@example.test").merchant
        big = merchant_create(name="big", email="big@example.test").merchant
        fill(url, args.payments, small.pk, big.pk)
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

    print(f"before: rolling the indexes back ({migrate('payments 0007', 'events 0004'):.1f} s)")
    current, selectors.payment_list = selectors.payment_list, old_payment_list
    results = run_phase("before", args, url, merchants, clients, cases)
    selectors.payment_list = current
    print(f"generic, after: migrating (CREATE INDEX CONCURRENTLY, {migrate(''):.1f} s)")
    results += run_phase("generic", args, url, merchants, clients, cases)
    results += run_phase("after", args, url, merchants, clients, cases)
    if args.rounds:
        plan_cost(args, merchants["small"])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
