"""Simulated issuer latency (`_svc_test_latency_ms`, up to 10 s): a real wait, but one that
holds no database connection or lock and cannot take every web thread (docs/payments.md
"Simulated latency").

The wait happens while the connector is asked (no transaction is open then: payments'
connector operations); the thread's database connection goes back to the pool first. A
merchant may have at most SANDBOX_LATENCY_CONCURRENCY simulated waits at once, and each wait
holds SANDBOX_LATENCY_COST more units of the merchant's test-mode budget (api.budgets: the
same all-or-none hold, in Redis when configured, so across every web process); one more is
refused with 429 `rate_limit_exceeded` before it waits, and processes nothing.
"""

import time

from django.conf import settings
from django.db import connection

from api import budgets
from api.errors import RateLimited

sleep = time.sleep  # module attribute: tests look at what is held while it runs


def simulated_wait(*, merchant_id: str, milliseconds: int) -> None:
    """Wait `milliseconds` holding one of the merchant's slots and no database connection,
    or refuse (429) when all its slots (or its test-mode budget) are taken."""
    slots = budgets.Scope(f"{merchant_id}:latency", settings.SANDBOX_LATENCY_CONCURRENCY)
    budget = budgets.merchant_scope(merchant_id, "test", settings.SANDBOX_LATENCY_COST)
    try:
        held = budgets.hold(slots, budget)
    except budgets.Refused as refused:
        what = (
            f"At most {slots.limit} payments with _svc_test_latency_ms may wait at once"
            if refused.scope == slots
            else "The test-mode concurrency budget is spent"
        )
        raise RateLimited(
            f"{what} on this account; nothing was processed. Retry shortly.",
            headers={"Retry-After": "1"},
        ) from None
    try:
        if not connection.in_atomic_block:
            connection.close()  # back to the pool; the next query takes one again
        sleep(milliseconds / 1000)
    finally:
        held.release()
