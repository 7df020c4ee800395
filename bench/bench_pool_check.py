"""Benchmark: what the check of a connection before a request uses it costs, in CPU.

Every request under the web server checks its connection before its first statement, whether
its thread kept it or the pool (`DATABASE_POOL`) hands it out (`DATABASE_CHECK`,
docs/dependencies.md). Measured here on one idle connection,
alternating in rounds so that the machine's load meets both ways alike:
- ours (`config.postgresql.base.dropped_by_the_server`): a poll of the connection's socket;
- psycopg_pool's own (`ConnectionPool.check_connection`, what ours replaced in issue 33): an
  empty query, one round trip.
The figures are CPU µs per check of this process (time.process_time) and of the connection's
PostgreSQL backend (/proc), and their ratios.

    .venv/bin/python bench/bench_pool_check.py --checks 20000

BENCH_DATABASE_URL (or --database-url) names the server; nothing is written.
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_payments import CLOCK_TICKS, ROOT, add_service_arguments  # noqa: E402


def backend_cpu_seconds(pid: int) -> float:
    """User + system CPU of one process so far (Linux's /proc)."""
    values = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(values[11]) + int(values[12])) / CLOCK_TICKS


def measure(connection, checks: int, rounds: int) -> dict:
    """-> {way: (process µs, backend µs) per check}, summed over alternating rounds."""
    from psycopg_pool import ConnectionPool

    from config.postgresql.base import dropped_by_the_server

    def ours(conn):
        assert not dropped_by_the_server(conn)

    ways = {
        "poll of the socket (ours)": ours,
        "empty query (psycopg_pool's)": ConnectionPool.check_connection,
    }
    backend = connection.info.backend_pid
    used = {name: [0.0, 0.0] for name in ways}
    per_round = max(1, checks // rounds)
    for _ in range(rounds):
        for name, check in ways.items():
            backend_started = backend_cpu_seconds(backend)
            started = time.process_time()
            for _ in range(per_round):
                check(connection)
            used[name][0] += time.process_time() - started
            used[name][1] += backend_cpu_seconds(backend) - backend_started
    total = per_round * rounds
    return {name: (own / total * 1e6, theirs / total * 1e6) for name, (own, theirs) in used.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_service_arguments(parser, "svc_bench")
    parser.add_argument("--checks", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import psycopg

    with psycopg.connect(args.database_url.rsplit("/", 1)[0] + "/postgres") as connection:
        connection.autocommit = True  # as the pool keeps its idle connections
        measure(connection, min(args.checks, 2000), 2)  # warm-up
        figures = measure(connection, args.checks, args.rounds)
    print(f"the pool's check, CPU µs per check ({args.checks} checks, load average "
          f"{os.getloadavg()[0]:.2f}):          this process   PostgreSQL")  # fmt: skip
    for name, (own, theirs) in figures.items():
        print(f"  {name:>30} {own:14.1f} {theirs:12.1f}")
    (ours, theirs) = figures.values()
    print(f"  {'ours / psycopg_pool':>30} {ours[0] / theirs[0]:14.2f} "
          f"{ours[1] / theirs[1] if theirs[1] else 0:12.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
