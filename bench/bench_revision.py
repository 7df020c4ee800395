"""Benchmark: what reading the configuration revision costs (infra/revision.py), per call.

Migrates a database it may drop and recreate, makes a merchant, then times, interleaved round
by round so that load on the machine hits each alike:

- `redis GET`: the revision as it was read before (one Redis GET), the baseline;
- `SELECT 1`: the floor of any PostgreSQL round trip;
- `revision`: authentication's read now (`SELECT value FROM api_config_revision WHERE id = 1`);
- `fan-out`: the fan-out's (`SELECT webhooks_fan_out_revision(merchant)`: the merchant's row
  FOR KEY SHARE, then the revision), inside a transaction that already wrote a row, as an
  event's does (BEGIN, the INSERT and the ROLLBACK are timed apart and not counted);
- `key lookup`: the API-key lookup a key-cache hit saves (the key joined to its merchant).

Reports the median of each, in microseconds, and its ratio to the Redis GET and to the floor.

    .venv/bin/python bench/bench_revision.py --calls 20000
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_payments import (  # noqa: E402
    PYTHON,
    ROOT,
    add_service_arguments,
    recreate_database,
)

KEY_LOOKUP = (
    "SELECT k.*, m.* FROM accounts_apikey k JOIN accounts_merchant m ON m.id = k.merchant_id"
    " WHERE k.key_hash IN (%s) ORDER BY k.id LIMIT 1"
)


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_service_arguments(parser, "svc_bench_revision")
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()

    env = {**os.environ, "DATABASE_URL": args.database_url, "REDIS_URL": args.redis_url}
    env.update(DEBUG="true", DJANGO_SETTINGS_MODULE="config.settings")
    recreate_database(args.database_url)
    run = dict(cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    subprocess.run([PYTHON, "manage.py", "migrate", "--noinput"], **run)
    made = subprocess.run(
        [PYTHON, "manage.py", "create_merchant", "--name", "B", "--email", "b@x.test", "--json"],
        **run,
    )
    merchant_id = json.loads(made.stdout)["id"]

    client = redis.Redis.from_url(args.redis_url)
    client.set("bench:revision", "1")
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        key_hash = conn.execute("SELECT key_hash FROM accounts_apikey LIMIT 1").fetchone()[0]
        statements = {
            "redis GET": lambda: client.get("bench:revision"),
            "SELECT 1": lambda: conn.execute("SELECT 1", prepare=True).fetchone(),
            "revision": lambda: conn.execute(
                "SELECT value FROM api_config_revision WHERE id = 1", prepare=True
            ).fetchone(),
            "fan-out": lambda: conn.execute(
                "SELECT webhooks_fan_out_revision(%s)", [merchant_id], prepare=True
            ).fetchone(),
            "key lookup": lambda: conn.execute(KEY_LOOKUP, [key_hash], prepare=True).fetchone(),
        }
        conn.execute("CREATE TEMP TABLE written (x int)")
        samples = {name: [] for name in statements}
        names = list(statements)
        for round_ in range(args.calls):
            # Each in turn comes first: what runs after a wait for the scheduler pays for it.
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                call = statements[name]
                if name == "fan-out":
                    # In a transaction that has written, as an event's has, so the lock is
                    # taken anew each time; the write and the rollback are not timed.
                    conn.execute("BEGIN")
                    conn.execute("INSERT INTO written VALUES (1)")
                    samples[name].append(timed(call))
                    conn.execute("ROLLBACK")
                else:
                    samples[name].append(timed(call))
    client.delete("bench:revision")

    base, floor = (statistics.median(samples[name]) for name in ("redis GET", "SELECT 1"))
    print(f"{args.calls} calls each, interleaved; median per call; ratio to redis GET, SELECT 1")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:>11}: {median * 1e6:7.1f} us  {median / base:5.2f}  {median / floor:5.2f}")


if __name__ == "__main__":
    main()
