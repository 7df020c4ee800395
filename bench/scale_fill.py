"""bench_scale's data: the service's own tables filled by INSERT ... SELECT generate_series
(docs/data.md "Benchmark"). A big merchant with 99.5% of the payments and a small one, both
modes (80% live), mixed statuses, currencies and methods, a year of `created` times with ULID
ids made at them (as the service makes them), each payment's events and, for the recent
ones, what the service keeps around them: deliveries to one endpoint per merchant and mode
with their attempts (dead letters among them, a backlog waiting, a few due), refunds,
connector operations, tokens, idempotency records and request-log entries.

The tables' secondary indexes are dropped for the fill and built again after it (as a bulk
load is done): at 10M payments this is several times faster than maintaining 14 indexes row
by row. Their definitions are read from the catalogue, so the schema is the migrations'.
"""

import time
from concurrent.futures import ThreadPoolExecutor

import psycopg

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
SMALL_EVERY = 200  # one payment in 200 is the small merchant's
DAY_MS = 86_400_000
# Kept around the recent payments only, as retention keeps them at its steady state (plus
# as much again past it, so the purges have work): deliveries and attempts of the events of
# the last DELIVERY_DAYS, operations of the last OPERATION_DAYS, request log...
DELIVERY_DAYS = 60  # EVENT_RETENTION_DAYS 30
OPERATION_DAYS = 14  # OPERATION_RETENTION_DAYS 7
TOKEN_DAYS = 3  # unused ones: purged a day after their 15 minutes
REQUEST_LOG_DAYS = 31  # REQUEST_LOG_RETENTION_DAYS 30
IDEMPOTENCY_HOURS = 26  # 24 hours
FILLED = (
    "payments_payment",
    "events_event",
    "webhooks_delivery",
    "webhooks_attempt",
    "refunds_refund",
    "payments_operation",
    "payments_token",
    "api_idempotencyrecord",
    "api_requestlogentry",
)


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
    customer, customer_details, outcome, metadata, created, due_at)
SELECT 'pay_' || {ULID}, CASE WHEN i %% {SMALL_EVERY} = 0 THEN %(small)s ELSE %(big)s END,
    (i / 3) %% 5 <> 0, status, amount, CASE WHEN status IN ('captured', 'refunded',
    'partially_refunded') THEN amount ELSE 0 END, CASE WHEN status = 'refunded' THEN amount
    WHEN status = 'partially_refunded' THEN amount / 2 ELSE 0 END, currency, 'order-' || i,
    'automatic', method, CASE WHEN method IN ('card', 'apple_pay', 'google_pay') THEN
    jsonb_build_object('brand', 'visa', 'last4', lpad((i %% 10000)::text, 4, '0'), 'bin',
    '424242', 'exp_month', 12, 'exp_year', 2099, 'funding', 'credit') END, '{{}}'::jsonb,
    'cus_' || lpad((i %% 50000)::text, 26, '0'), jsonb_build_object('email', 'customer'
    || (i %% 50000) || '@example.test', 'name', 'Customer ' || (i %% 50000)),
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
WHERE (k = 0 OR p.status <> 'pending')
"""
# One endpoint per merchant and mode.
ENDPOINTS = """
INSERT INTO webhooks_webhookendpoint (id, merchant_id, livemode, url, enabled_events,
    secret_encrypted, secret_last4, created)
SELECT 'whe_' || upper(substr(md5(m.id || mode), 1, 26)), m.id, mode,
    'https://hooks.example.test/' || m.name || '/' || mode, '["*"]'::jsonb, 'not-a-secret',
    'abcd', now() - interval '400 days'
FROM accounts_merchant m, (VALUES (true), (false)) AS modes (mode)
"""
# A delivery per recent event: 1% dead-lettered after 3 attempts, 0.5% pending (due in an
# hour: a dead endpoint's backlog), the last 10 minutes' pending and due now (in flight are
# none), the rest delivered at their first attempt.
DELIVERIES = """
INSERT INTO webhooks_delivery (id, event_id, endpoint_id, status, attempt_count,
    next_attempt_at, created)
SELECT 'whd_' || substr(e.id, 5), e.id, w.id, d.status,
    CASE d.status WHEN 'dead_lettered' THEN 3 WHEN 'delivered' THEN 1 ELSE 0 END,
    CASE WHEN d.status <> 'pending' THEN NULL
         WHEN e.created > now() - interval '10 minutes' THEN e.created
         ELSE now() + interval '1 hour' END,
    e.created
FROM events_event e
JOIN webhooks_webhookendpoint w ON w.merchant_id = e.merchant_id AND w.livemode = e.livemode
CROSS JOIN LATERAL (SELECT CASE
    WHEN e.created > now() - interval '10 minutes' THEN 'pending'
    WHEN abs(hashtext(e.id)) %% 1000 < 10 THEN 'dead_lettered'
    WHEN abs(hashtext(e.id)) %% 1000 BETWEEN 990 AND 994 THEN 'pending'
    ELSE 'delivered' END AS status) AS d
WHERE e.id >= %(since)s
"""
ATTEMPTS = """
INSERT INTO webhooks_attempt (id, delivery_id, event_id, endpoint_id, attempt, status,
    http_status, response_body, error, duration_ms, attempted_at)
SELECT 'wha_' || substr(d.id, 5, 25) || n, d.id, d.event_id, d.endpoint_id, n,
    CASE WHEN d.status = 'delivered' THEN 'delivered' ELSE 'failed' END,
    CASE WHEN d.status = 'delivered' THEN 200 ELSE 500 END,
    CASE WHEN d.status = 'delivered' THEN 'ok' ELSE 'Internal Server Error' END,
    CASE WHEN d.status = 'delivered' THEN NULL ELSE 'HTTP 500' END, 40 + n,
    d.created + n * interval '1 minute'
FROM webhooks_delivery d, generate_series(1, 3) AS n
WHERE n <= d.attempt_count
"""
DEAD_LETTERED = """
UPDATE events_event e SET dead_lettered_at = d.created + interval '3 days'
FROM webhooks_delivery d WHERE d.event_id = e.id AND d.status = 'dead_lettered'
"""
REFUNDS = """
INSERT INTO refunds_refund (id, merchant_id, payment_id, livemode, amount, currency, status,
    metadata, created)
SELECT 'ref_' || substr(p.id, 5), p.merchant_id, p.id, p.livemode, p.amount_refunded,
    p.currency, 'succeeded', '{}'::jsonb, p.created + interval '1 day'
FROM payments_payment p WHERE p.status IN ('refunded', 'partially_refunded')
"""
OPERATIONS = """
INSERT INTO payments_operation (id, payment_id, kind, state, request, api_version, created)
SELECT 'op_' || substr(p.id, 5), p.id, 'create', 'applied',
    jsonb_build_object('amount', p.amount, 'currency', p.currency, 'customer_details',
        p.customer_details),
    '2026-08-19', p.created
FROM payments_payment p WHERE p.id >= %(since)s
"""
# A token per recent payment (used), and one in fifty left unused.
TOKENS = """
INSERT INTO payments_token (id, merchant_id, livemode, type, brand, last4, bin, exp_month,
    exp_year, fingerprint, planned_outcome, created, expires_at, used_at)
SELECT 'tok_' || substr(p.id, 5), p.merchant_id, p.livemode, 'card', 'visa', '4242',
    '424242', 12, 2099, md5(p.customer), 'approve', p.created,
    p.created + interval '15 minutes',
    CASE WHEN hashtext(p.id) %% 50 <> 0 THEN p.created END
FROM payments_payment p WHERE p.id >= %(since)s
"""
IDEMPOTENCY = """
INSERT INTO api_idempotencyrecord (merchant_id, livemode, key_hash, fingerprint, method, path,
    request_id, lease_token, lease_until, status, content_type, body, created, expires_at)
SELECT p.merchant_id, p.livemode, md5(p.id), md5(p.reference), 'POST', '/v1/payments',
    'req_' || substr(p.id, 5), '', p.created, 201, 'application/json',
    convert_to('{"id": "' || p.id || '"}', 'UTF8'), p.created,
    p.created + interval '24 hours'
FROM payments_payment p WHERE p.id >= %(since)s
"""
REQUEST_LOG = """
INSERT INTO api_requestlogentry (id, merchant_id, livemode, key_id, method, path, status,
    idempotency_key, replayed, api_version, duration_ms, created)
SELECT 'req_' || substr(p.id, 5), p.merchant_id, p.livemode, 'key_bench', 'POST',
    '/v1/payments', 201, 'idem-' || p.reference, false, '2026-08-19', 12.5, p.created
FROM payments_payment p WHERE p.id >= %(since)s
"""


def id_since(prefix: str, days: float) -> str:
    """The smallest id of that prefix made `days` ago (api.ids.id_floor's rule, in Python
    here so the fill needs no Django)."""
    ms = int((time.time() - days * 86_400) * 1000)
    chars = "".join(CROCKFORD[(ms >> (5 * k)) & 31] for k in range(9, -1, -1))
    return f"{prefix}_{chars}"


def secondary_indexes(conn) -> list[tuple[str, str]]:
    """(name, definition) of the filled tables' indexes that back no constraint."""
    return conn.execute(
        """SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
        FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
        WHERE t.relname = ANY(%s)
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)""",
        [list(FILLED)],
    ).fetchall()


def step(url: str, label: str, statement: str, params: dict | None = None) -> None:
    """One statement on a connection of its own (steps run side by side)."""
    started = time.monotonic()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute("SET synchronous_commit = off")
        # No foreign-key triggers (three lookups per attempt row): the rows are made from
        # their parents, consistent by construction.
        conn.execute("SET session_replication_role = replica")
        rows = conn.execute(statement, params).rowcount
    print(f"  {label}: {rows:,} rows, {time.monotonic() - started:.0f} s", flush=True)


def side_by_side(url: str, steps: list[tuple], workers: int = 3) -> None:
    with ThreadPoolExecutor(workers) as pool:
        for done in [pool.submit(step, url, *s) for s in steps]:
            done.result()


def fill_rows(url: str, payments: int, small: str, big: str) -> None:
    """The payments, then what hangs off them; independent tables side by side."""
    step(url, "payments", PAYMENTS, {"payments": payments, "small": small, "big": big})
    mid = id_since("pay", 182)
    side_by_side(
        url,
        [
            ("events, older half", EVENTS + f" AND p.id < '{mid}'"),
            ("events, newer half", EVENTS + f" AND p.id >= '{mid}'"),
            ("refunds", REFUNDS),
            ("operations", OPERATIONS, {"since": id_since("pay", OPERATION_DAYS)}),
            ("tokens", TOKENS, {"since": id_since("pay", TOKEN_DAYS)}),
            ("idempotency", IDEMPOTENCY, {"since": id_since("pay", IDEMPOTENCY_HOURS / 24)}),
            ("request log", REQUEST_LOG, {"since": id_since("pay", REQUEST_LOG_DAYS)}),
        ],
    )
    step(url, "endpoints", ENDPOINTS)
    step(url, "deliveries", DELIVERIES, {"since": id_since("evt", DELIVERY_DAYS)})
    side_by_side(url, [("attempts", ATTEMPTS), ("dead-lettered events", DEAD_LETTERED)])


def fill(url: str, payments: int, small: str, big: str, *, vacuum: bool = True) -> None:
    """The tables filled, their indexes built again, analysed (and vacuumed: the visibility
    map index-only scans need; an hour at 10M payments on a loaded machine)."""
    started = time.monotonic()
    with psycopg.connect(url, autocommit=True) as conn:
        indexes = secondary_indexes(conn)
        for name, _ in indexes:
            conn.execute(f"DROP INDEX {name}")
    fill_rows(url, payments, small, big)
    built = time.monotonic()
    side_by_side(url, [(f"index {name}", definition) for name, definition in indexes])
    print(f"  {len(indexes)} indexes built in {time.monotonic() - built:.0f} s", flush=True)
    command = "VACUUM ANALYZE" if vacuum else "ANALYZE"
    side_by_side(url, [(f"{command} {table}", f"{command} {table}") for table in FILLED])
    with psycopg.connect(url, autocommit=True) as conn:
        events = conn.execute("SELECT count(*) FROM events_event").fetchone()[0]
    print(f"filled {payments:,} payments, {events:,} events in {time.monotonic() - started:.0f} s")
