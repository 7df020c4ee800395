"""Benchmark: what a made-up key costs the web process, looked up or refused by step 2b
(docs/admission.md "Made-up keys from many addresses").

In one process, through Django's test client: GET /v1/payments with a new made-up live secret
key from a new address each time, in rounds alternating between the fleet's bound off (every
key looked up: address bucket, DRF, the key query) and on (step 2b: the key filter, no key
query, no URL, no DRF). The process's CPU per request, each round's ratio on/off. PostgreSQL's
own CPU for the key query is not counted (the saving is larger than shown).

    DEBUG=true .venv/bin/python bench/bench_unknown_keys.py [--rounds 6] [--count 400]

Runs against DATABASE_URL (migrated) and REDIS_URL as set; creates one merchant there.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test import Client  # noqa: E402

from accounts.services import merchant_create  # noqa: E402
from admission import buckets  # noqa: E402

UNLIMITED = {"rate": 1e6, "burst": 10**6}
_sent = [0]


def made_up_request(client: Client) -> int:
    _sent[0] += 1
    n = _sent[0]
    return client.get(
        "/v1/payments",
        HTTP_AUTHORIZATION=f"Bearer svc_sk_live_{n:020d}",
        REMOTE_ADDR=f"10.{n % 250}.{n // 250 % 250}.1",
    ).status_code


def cpu_per_request(client: Client, bounded: bool, count: int) -> float:
    """µs of this process's CPU per made-up key, after three that empty the bound (bounded)
    and build the key filter."""
    settings.API_UNKNOWN_KEY_RATE_LIMIT = {"rate": 0.001, "burst": 1} if bounded else UNLIMITED
    buckets.forget_refusals()
    for _ in range(3):
        made_up_request(client)
    started = time.process_time()
    statuses = {made_up_request(client) for _ in range(count)}
    assert statuses == {401}, statuses
    return (time.process_time() - started) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--count", type=int, default=400)
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["*"]
    settings.API_ADDRESS_RATE_LIMIT = UNLIMITED  # many addresses, each under its limit
    merchant_create(name="bench", email="bench@example.test")
    client, ratios = Client(), []
    for _ in range(args.rounds):
        looked_up = cpu_per_request(client, False, args.count)
        refused = cpu_per_request(client, True, args.count)
        ratios.append(refused / looked_up)
        print(f"looked up {looked_up:.0f} µs, step 2b {refused:.0f} µs, ratio {ratios[-1]:.2f}")
    print(f"median ratio {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
