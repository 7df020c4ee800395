"""Benchmark: what admission's Redis calls cost the web process per `/v1` request, in CPU.

A secret key's request takes its tokens and its merchant's units, and gives the units back
when it leaves (docs/admission.md). Measured here in one process against Redis, alternating
in rounds so that the machine's load meets both ways alike:
- one script (`budgets.hold_after_tokens`, what `KeyLimits` runs): the tokens and the units
  in one round trip, then the units given back: two round trips;
- two scripts (`buckets.take_token`, then `budgets.hold`, as before issue 33's cut), then
  the units given back: three round trips.
The figure is CPU µs per request of this process (time.process_time) and their ratio; the
limits are lifted so that nothing is refused.

    .venv/bin/python bench/bench_admission.py --requests 20000

BENCH_REDIS_URL (or --redis-url) names the Redis server; the run's keys are named by it alone
and expire within a minute.
"""

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_payments import ROOT, add_service_arguments, production_env  # noqa: E402

LIFTED = 10**9  # tokens and units: nothing is refused


def one_script(take, scope) -> None:
    from admission import budgets

    _, held = budgets.hold_after_tokens(take, scope)
    held.release()


def two_scripts(take, scope) -> None:
    from admission import buckets, budgets

    buckets.take_token(take.bucket, rate=take.rate, burst=take.burst, cost=take.cost)
    budgets.hold(scope).release()


def measure(requests: int, rounds: int) -> dict:
    """-> CPU µs per request for each way, summed over `rounds` alternating rounds."""
    from admission import buckets, budgets

    take = buckets.Take(f"key_bench_{uuid.uuid4().hex}", rate=LIFTED, burst=LIFTED)
    scope = budgets.Scope(f"acct_bench_{uuid.uuid4().hex}:test", limit=LIFTED)
    used = {one_script: 0.0, two_scripts: 0.0}
    per_round = max(1, requests // rounds)
    for _ in range(rounds):
        for way in used:
            started = time.process_time()
            for _ in range(per_round):
                way(take, scope)
            used[way] += time.process_time() - started
    return {way.__name__: seconds / (per_round * rounds) * 1e6 for way, seconds in used.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_service_arguments(parser, "svc_bench")
    parser.set_defaults(app=str(ROOT))  # production_env's checkout: this one
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    os.environ.update(production_env(args))
    sys.path.insert(0, os.environ["PYTHONPATH"])
    import django

    django.setup()
    from admission import store

    if store.shared() is None:
        raise SystemExit("admission's store is not Redis: set BENCH_REDIS_URL or --redis-url")
    measure(min(args.requests, 2000), 2)  # warm-up: connections, scripts registered
    figures = measure(args.requests, args.rounds)
    print(f"admission, CPU µs per request of this process ({args.requests} requests, "
          f"load average {os.getloadavg()[0]:.2f}):")  # fmt: skip
    for name, micros in figures.items():
        print(f"  {micros:8.1f}  {name.replace('_', ' ')}")
    print(f"  one script / two scripts: {figures['one_script'] / figures['two_scripts']:.2f}")


if __name__ == "__main__":
    main()
