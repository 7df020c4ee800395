"""Simulated issuer latency (`_svc_test_latency_ms`, up to 10 s): a real wait, but one that
holds no database connection or lock and cannot take every web thread (docs/payments.md
"Simulated latency").

The wait happens while the connector is asked (no transaction is open then: payments'
connector operations); the thread's database connection goes back to the pool first. A
merchant may have at most SANDBOX_LATENCY_CONCURRENCY simulated waits at once, counted in the
cache (Redis when configured: across every web process; per process otherwise); one more is
refused with 429 `rate_limit_exceeded` before it waits, and processes nothing.
"""

import time

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from api.errors import RateLimited

# A process killed mid-wait leaves its slot counted until the counter expires.
SLOT_TTL_SECONDS = 60

sleep = time.sleep  # module attribute: tests look at what is held while it runs


def _key(merchant_id: str) -> str:
    return f"sandbox:latency-slots:{merchant_id}"


def _take_slot(key: str) -> bool:
    cache.add(key, 0, timeout=SLOT_TTL_SECONDS)
    try:
        taken = cache.incr(key)
    except ValueError:  # expired between add and incr: nothing is counted, let it through
        return True
    cache.touch(key, SLOT_TTL_SECONDS)
    if taken > settings.SANDBOX_LATENCY_CONCURRENCY:
        _give_back(key)
        return False
    return True


def _give_back(key: str) -> None:
    try:
        cache.decr(key)
    except ValueError:  # expired meanwhile
        pass


def simulated_wait(*, merchant_id: str, milliseconds: int) -> None:
    """Wait `milliseconds` holding one of the merchant's slots and no database connection,
    or refuse (429) when all its slots are taken."""
    key = _key(merchant_id)
    if not _take_slot(key):
        limit = settings.SANDBOX_LATENCY_CONCURRENCY
        raise RateLimited(
            f"At most {limit} payments with _svc_test_latency_ms may wait at once on this "
            "account; nothing was processed. Retry shortly.",
            headers={"Retry-After": "1"},
        )
    try:
        if not connection.in_atomic_block:
            connection.close()  # back to the pool; the next query takes one again
        sleep(milliseconds / 1000)
    finally:
        _give_back(key)
