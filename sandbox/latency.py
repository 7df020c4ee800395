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
from contextlib import contextmanager

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


@contextmanager
def merchant_slot(*, merchant_id: str, refusal: str):
    """Hold one of the merchant's SANDBOX_LATENCY_CONCURRENCY slots for the block, or refuse
    with 429 `rate_limit_exceeded` and `refusal` before it runs. The slots are shared by the
    sandbox's calls that hold a web thread for seconds: simulated latency, and
    simulate-webhook's inline deliveries (docs/webhooks.md "simulate-webhook")."""
    key = _key(merchant_id)
    if not _take_slot(key):
        raise RateLimited(refusal, headers={"Retry-After": "1"})
    try:
        yield
    finally:
        _give_back(key)


def simulated_wait(*, merchant_id: str, milliseconds: int) -> None:
    """Wait `milliseconds` holding one of the merchant's slots and no database connection,
    or refuse (429) when all its slots are taken."""
    limit = settings.SANDBOX_LATENCY_CONCURRENCY
    refusal = (
        f"At most {limit} payments with _svc_test_latency_ms may wait at once on this "
        "account; nothing was processed. Retry shortly."
    )
    with merchant_slot(merchant_id=merchant_id, refusal=refusal):
        if not connection.in_atomic_block:
            connection.close()  # back to the pool; the next query takes one again
        sleep(milliseconds / 1000)
