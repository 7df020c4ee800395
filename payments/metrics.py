"""The payments' metrics (docs/observability.md "Metrics"): the statuses payments enter, the
connectors' authorisation answers (the authorisation rate) and how long connectors take.

Counted by the process that writes the change (web or worker), once its transaction commits,
into the node's multiprocess files; a change rolled back is never counted.
"""

import contextlib
import time

from django.db import transaction
from prometheus_client import Counter, Histogram

from infra.metrics import labelled
from payments.states import Status, Trigger

PAYMENTS = Counter(
    "svc_payments",
    "Payments entering a status, with the decline code of the connector's last answer.",
    ["mode", "status", "decline_code"],
)
AUTHORIZATIONS = Counter(
    "svc_payment_authorizations",
    "Connectors' answers to authorisation attempts: approved, declined, failed, "
    "requires_action, processing (the authorisation rate is approved / "
    "(approved + declined + failed)).",
    ["mode", "outcome", "decline_code"],
)
CONNECTOR_LATENCY = Histogram(
    "svc_connector_request_duration_seconds",
    "How long one connector call took, by connector, operation and result.",
    ["connector", "operation", "mode", "result"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
# The triggers whose status comes from a connector's authorisation answer.
ANSWERED = {Trigger.CREATE, Trigger.CONFIRM, Trigger.PAYER_ACTION, Trigger.RESOLVE}
APPROVED = {Status.AUTHORIZED, Status.CAPTURED}


def payment_entered(payment, trigger: Trigger) -> None:
    """Count the status `payment` now has, after the caller's transaction commits."""
    mode = "live" if payment.livemode else "test"
    status = str(payment.status)
    code = (payment.outcome or {}).get("decline_code") or ""
    answered = trigger in ANSWERED and status != Status.PENDING

    def count() -> None:
        labelled(PAYMENTS, mode, status, code).inc()
        if answered:
            outcome = "approved" if status in APPROVED else status
            labelled(AUTHORIZATIONS, mode, outcome, code).inc()

    transaction.on_commit(count)


@contextlib.contextmanager
def connector_call(connector, operation: str, livemode: bool):
    """Time one connector call; `result` is `ok` or `error` (it raised)."""
    started, result = time.perf_counter(), "error"
    try:
        yield
        result = "ok"
    finally:
        labelled(
            CONNECTOR_LATENCY,
            type(connector).__name__,
            str(operation),
            "live" if livemode else "test",
            result,
        ).observe(time.perf_counter() - started)
