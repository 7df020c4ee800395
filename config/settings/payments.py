"""Payments, the sandbox and refunds: connectors, limits, operations and their beat tasks
(docs/payments.md, docs/sandbox.md, docs/refunds.md)."""

import datetime

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import env
from config.settings.broker import CELERY_BEAT_SCHEDULE, every

# --- payments --------------------------------------------------------------------------------
# Connector per mode (payments.connectors). Test keys go to the simulator; live keys to the
# connector a merchant's route names, with the connector account the route names
# (docs/processors.md); with no route a live payment is 422 no_route.
PAYMENT_CONNECTORS: dict[str, str] = {
    "test": "sandbox.simulator.SimulatorConnector",
    "stripe": "processors.stripe.connector.StripeConnector",
}
# --- processors (docs/processors.md) ----------------------------------------------------------
# Where the hosted-fields and authentication pages load Stripe.js from: Stripe's own, unless a
# deployment serves it otherwise (an emulator's stand-in in tests).
STRIPE_JS_URL = env.str("STRIPE_JS_URL", default="https://js.stripe.com/v3/")
# One Stripe call's deadline, in seconds: past it the call is in doubt (ConnectorInDoubt) and
# recovery asks again with the same Idempotency-Key.
STRIPE_TIMEOUT_SECONDS = env.float("STRIPE_TIMEOUT_SECONDS", default=20.0)
# Stripe's 429 (its rate limit) is retried with backoff this many times within the deadline.
STRIPE_RATE_LIMIT_RETRIES = env.int("STRIPE_RATE_LIMIT_RETRIES", default=2)
# Per-transaction limit, in minor units of the payment's currency, for merchants whose own
# `transaction_limit` is empty (docs/methods.md "Per-account transaction limit").
PAYMENT_TRANSACTION_LIMIT = env.int("PAYMENT_TRANSACTION_LIMIT", default=100_000_000)
# How old a `started` connector operation must be before beat takes it for abandoned by its
# process and asks the connector again (longer than any connector call takes).
OPERATION_RECOVERY_SECONDS = env.int("OPERATION_RECOVERY_SECONDS", default=60)
# Finished operations are deleted this long after they started (docs/data.md "Retention"); the
# 24-hour idempotency replay window (a retry resumes its operation) is the floor.
OPERATION_RETENTION = datetime.timedelta(days=env.float("OPERATION_RETENTION_DAYS", default=7))
if OPERATION_RETENTION < datetime.timedelta(days=2):
    raise ImproperlyConfigured("OPERATION_RETENTION_DAYS must be at least 2.")
if not 0 < PAYMENT_TRANSACTION_LIMIT < 2**53:
    raise ImproperlyConfigured("PAYMENT_TRANSACTION_LIMIT must be a positive integer below 2^53.")
CELERY_BEAT_SCHEDULE.update(
    {
        "payments-resolve-due": every("payments.tasks.resolve_due_payments", 10.0),
        "payments-expire-due": every("payments.tasks.expire_due_payments", 60.0),
        # Connector operations left `started` by a process that died (docs/payments.md
        # "Connector operations").
        "payments-recover-operations": every("payments.tasks.recover_operations", 30.0),
        "payments-purge-finished-operations": every(
            "payments.tasks.purge_finished_operations", 3600.0
        ),
        "payments-purge-unused-tokens": every("payments.tasks.purge_unused_tokens", 3600.0),
    }
)
# Simulated issuer waits (`_svc_test_latency_ms`) one merchant may have at once; one more is
# 429 (docs/payments.md "Simulated latency").
SANDBOX_LATENCY_CONCURRENCY = env.int("SANDBOX_LATENCY_CONCURRENCY", default=2)
# Units of the merchant's test-mode budget (API_CONCURRENCY_LIMITS) a wait holds beyond its
# request's own (docs/admission.md "Budgets").
SANDBOX_LATENCY_COST = env.int("SANDBOX_LATENCY_COST", default=2)
CELERY_BEAT_SCHEDULE["sandbox-purge-challenge-sessions"] = every(
    "sandbox.tasks.purge_old_challenge_sessions", 3600.0
)

# --- refunds ---------------------------------------------------------------------------------
CELERY_BEAT_SCHEDULE["refunds-resolve-due"] = every("refunds.tasks.resolve_due_refunds", 10.0)
CELERY_BEAT_SCHEDULE["refunds-recover-operations"] = every(
    "refunds.tasks.recover_refund_operations", 30.0
)
