"""What PostgreSQL is sent and writes per test create: every statement, by its text, from
libpq's own trace of the connections (prepared statements included), and the rows each hot
table took, from PostgreSQL's statistics (docs/payments.md "Where a create's CPU goes").

In-process (Django's test client, the bench's production settings), on a scratch database it
drops and recreates; every connection Django opens is traced. The check of a connection before
a request's first statement (`DATABASE_CHECK`) sends nothing (a poll of the connection's
socket, config/postgresql/base.py).

    .venv/bin/python bench/statements_per_create.py --creates 200
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_payments  # noqa: E402

TABLES = ("payments_payment", "payments_token", "payments_operation", "events_event",
          "api_idempotencyrecord", "api_requestlogentry")  # fmt: skip

CREATES = """
import json, os, sys, django
django.setup()
import psycopg
from django.db import connection
from django.test import Client
from django.db.backends.signals import connection_created
from api.request_recorder import writer

trace, secret, tokens = open(sys.argv[1], "w"), sys.argv[2], sys.argv[3:]
traced = set()

def tracing(sender, connection, **kwargs):
    conn = connection.connection  # with DATABASE_POOL, a pooled one seen again: traced once
    if id(conn) not in traced:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        traced.add(id(conn))

connection_created.connect(tracing)
client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", SERVER_NAME="127.0.0.1")
for token in tokens:
    body = {"amount": 1000, "currency": "eur", "reference": "bench",
            "payment_method": {"type": "card", "token": token}}
    response = client.post("/v1/payments", json.dumps(body), content_type="application/json",
                           HTTP_IDEMPOTENCY_KEY=os.urandom(8).hex())
    assert response.status_code == 201, response.content
writer.flush()  # the request log's rows, which its thread writes in batches
trace.flush()
"""


def messages(trace: str) -> list[str]:
    """The trace's messages: a statement written over several lines continues its message
    (read line by line, its Bind was counted under the unnamed statement parsed before it)."""
    found: list[str] = []
    for line in trace.splitlines():
        if re.match(r"[FB]\t\d+\t", line) or not found:
            found.append(line)
        else:
            found[-1] += "\n" + line
    return found


def statements(trace: Path) -> collections.Counter:
    """Statements the client ran, by text: simple queries (BEGIN, COMMIT) and each Bind of a
    prepared or unnamed statement, named by its Parse."""
    names, counts = {}, collections.Counter()
    for line in messages(trace.read_text(errors="replace")):
        fields = line.split("\t")
        if len(fields) < 3 or fields[0] != "F":
            continue
        message = " ".join(fields[2:])
        if found := re.match(r'Parse\s+"([^"]*)" "(.*)" \d+', message, re.S):
            names[found[1]] = " ".join(found[2].split())
        elif found := re.match(r'Bind\s+"[^"]*" "([^"]*)"', message):
            counts[names.get(found[1], "?")] += 1
        elif found := re.match(r'Query\s+"(.*)"', message):
            counts[found[1]] += 1
    return counts


def table_rows(database_url: str) -> dict:
    """Rows inserted, updated and updated HOT so far, per hot table."""
    time.sleep(1.5)  # PostgreSQL reports a backend's counts within a second
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
            "WHERE relname = ANY(%s) ORDER BY relname",
            [list(TABLES)],
        ).fetchall()
    return {table: counts for table, *counts in rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench_payments.add_service_arguments(parser, "svc_bench_statements")
    parser.add_argument("--app", default=str(bench_payments.ROOT))
    parser.add_argument("--creates", type=int, default=200)
    args = parser.parse_args()
    args.pool_max, args.production_limits = 8, False
    env = bench_payments.service_env(args)
    bench_payments.recreate_database(args.database_url)
    bench_payments.manage(env, "migrate", "--noinput")
    account = json.loads(
        bench_payments.manage(
            env, "create_merchant", "--name", "B", "--email", "b@x.test", "--json"
        )
    )
    tokens = bench_payments.create_tokens(env, account["id"], args.creates)
    before = table_rows(args.database_url)
    with tempfile.TemporaryDirectory() as scratch:
        trace = Path(scratch) / "trace"
        secret = account["keys"]["test"]["secret"]
        subprocess.run(
            [bench_payments.PYTHON, "-c", CREATES, str(trace), secret, *tokens],
            cwd=env["PYTHONPATH"], env=env, check=True,
        )  # fmt: skip
        counts = statements(trace)
    n = args.creates
    print(f"{n} test creates, in-process: statements per create")
    for text, count in counts.most_common():
        if count >= n / 20:
            print(f"{count / n:6.2f}  {text[:110]}")
    print(f"{sum(counts.values()) / n:6.2f}  in all (incl. the first request's and the batched)")
    after = table_rows(args.database_url)
    print("rows per create: table, inserted, updated (of which HOT: no index entry)")
    for table, counts in after.items():
        inserted, updated, hot = (
            now - then for now, then in zip(counts, before[table], strict=True)
        )
        print(f"  {table:<24} {inserted / n:5.2f} {updated / n:5.2f} ({hot / n:.2f})")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
