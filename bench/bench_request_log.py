"""Benchmark: what the request log costs per `/v1` request, in CPU, in one quiet process.

What REQUEST_LOG_ENABLED switches (docs/request-log.md): on the request's path, its entry built
(`entry_of`) and queued (`writer.add`); in the background, the writer's batched write
(`writer.flush`, 500 rows a COPY), in the web process and in PostgreSQL. Each is timed
here with the process's CPU clock and the PostgreSQL backend's /proc counters, on `--entries`
entries shaped like a payment create's, so the figure does not drown in the noise that other
load puts on `bench/ab.py --env-b REQUEST_LOG_ENABLED=false` (the end-to-end comparison).

    .venv/bin/python bench/bench_request_log.py --entries 20000

BENCH_DATABASE_URL names the server; the database is `<its name>_request_log`, dropped and
recreated.
"""

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_payments import (  # noqa: E402
    CLOCK_TICKS,
    ROOT,
    add_service_arguments,
    manage,
    process_table,
    production_env,
    recreate_database,
)


def backend_cpu_seconds(pid: int) -> float:
    return process_table()[pid][2] / CLOCK_TICKS


def measure(count: int, round_size: int = 5000) -> dict:
    """-> CPU µs per entry: queued on the request's path, inserted by the writer (the web
    process, PostgreSQL). In rounds the writer's queue holds (QUEUE_LIMIT)."""
    from django.db import connection
    from django.http import HttpResponse
    from django.test import RequestFactory

    from accounts.models import ApiKey
    from api.ids import new_id
    from api.request_recorder import entry_of, request_log_fields, writer

    key = ApiKey(id="key_bench", merchant_id="acct_bench", livemode=False)
    response = HttpResponse(status=201)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    queued = inserted = backend_used = 0.0
    for done in range(0, count, round_size):
        requests = []
        for _ in range(min(round_size, count - done)):  # as a payment create: keyed, 201
            request = RequestFactory().post("/v1/payments", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
            request.api_key, request.request_id = key, new_id("req")
            request.api_version = "2026-08-19"
            requests.append((request, request_log_fields(request, response, 12.3)))

        started = time.process_time()
        for request, fields in requests:
            writer.add(entry_of(request, fields, response))
        queued += time.process_time() - started

        backend_started, started = backend_cpu_seconds(backend), time.process_time()
        written = writer.flush()
        inserted += time.process_time() - started
        backend_used += backend_cpu_seconds(backend) - backend_started
        assert written == len(requests), (written, len(requests))
    return {
        "queued on the request's path": queued / count * 1e6,
        "inserted: web process (writer thread)": inserted / count * 1e6,
        "inserted: PostgreSQL backend": backend_used / count * 1e6,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_service_arguments(parser, "svc_bench")
    parser.add_argument("--app", default=str(ROOT), help="the checkout measured")
    parser.add_argument("--entries", type=int, default=20000)
    args = parser.parse_args()
    args.database_url += "_request_log"  # beside bench_payments' database, not in its way

    env = {**production_env(args), "REQUEST_LOG_FLUSH_SECONDS": "0"}  # no thread: flushed here
    recreate_database(args.database_url)
    manage(env, "migrate", "--noinput")
    os.environ.update(env)
    sys.path.insert(0, env["PYTHONPATH"])
    # Celery's Django fixup puts the working directory first on sys.path at setup: run from
    # the checkout measured, or its modules would be this one's.
    os.chdir(env["PYTHONPATH"])
    import django

    django.setup()
    measure(min(args.entries, 2000))  # warm-up: imports, statements prepared
    print(f"request log, CPU µs per entry ({args.entries} entries, load average "
          f"{os.getloadavg()[0]:.2f}):")  # fmt: skip
    for name, micros in measure(args.entries).items():
        print(f"  {micros:8.1f}  {name}")


if __name__ == "__main__":
    main()
