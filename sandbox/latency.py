"""Simulated issuer latency (`_svc_test_latency_ms`, up to 10 s): a real wait, but one that
holds no database connection or lock and cannot take every web thread (docs/payments.md
"Simulated latency").

The wait happens while the connector is asked (no transaction is open then: payments'
connector operations); the thread's database connection goes back to the pool first. A
merchant may have at most SANDBOX_LATENCY_CONCURRENCY simulated waits at once, and each wait
holds SANDBOX_LATENCY_COST more units of the merchant's test-mode budget (admission.budgets: the
same all-or-none hold, in Redis when configured, so across every web process); one more is
refused with 429 `rate_limit_exceeded` before it waits, and processes nothing.
"""

import time
from contextlib import contextmanager

from django.conf import settings
from django.db import connection

from admission import budgets
from api.errors import RateLimited

sleep = time.sleep  # module attribute: tests look at what is held while it runs


@contextmanager
def merchant_slot(*, merchant_id: str, refusal: str, cost: int = 0):
    """Hold one of the merchant's SANDBOX_LATENCY_CONCURRENCY slots (and `cost` units of its
    test-mode budget, admission/budgets.py) for the block, or refuse with 429 `rate_limit_exceeded`
    before it runs. The slots are shared by the sandbox's calls that hold a web thread for
    seconds: simulated latency, and simulate-webhook's inline deliveries (docs/webhooks.md
    "simulate-webhook")."""
    slots = budgets.Scope(f"{merchant_id}:latency", settings.SANDBOX_LATENCY_CONCURRENCY)
    scopes = [slots, budgets.merchant_scope(merchant_id, "test", cost)] if cost else [slots]
    try:
        held = budgets.hold(*scopes)
    except budgets.Refused as refused:
        if refused.scope != slots:
            refusal = (
                "The test-mode concurrency budget is spent on this account; nothing was "
                "processed. Retry shortly."
            )
        raise RateLimited(refusal, headers={"Retry-After": "1"}) from None
    try:
        yield
    finally:
        held.release()


def simulated_wait(*, merchant_id: str, milliseconds: int) -> None:
    """Wait `milliseconds` holding one of the merchant's slots and no database connection,
    or refuse (429) when all its slots (or its test-mode budget) are taken."""
    refusal = (
        f"At most {settings.SANDBOX_LATENCY_CONCURRENCY} payments with _svc_test_latency_ms "
        "may wait at once on this account; nothing was processed. Retry shortly."
    )
    cost = settings.SANDBOX_LATENCY_COST
    with merchant_slot(merchant_id=merchant_id, refusal=refusal, cost=cost):
        if not connection.in_atomic_block:
            # As between two requests: one from the pool (DATABASE_POOL) goes back to it for
            # the wait; a connection the thread keeps stays, checked again before its next use.
            connection.close_if_unusable_or_obsolete()
        sleep(milliseconds / 1000)
