"""The refund status machine, failure codes and events (docs/refunds.md; the spec leaves the
refund transitions "not shown").

A refund is born `pending`, `succeeded` or `failed` (whatever the connector answers at once);
only `pending` moves on, to `succeeded` or `failed`, both final. A connector asked about a
pending refund may answer `pending` again: it is asked again later, and nothing is emitted.
"""

from django.db import models


class RefundStatus(models.TextChoices):
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


R = RefundStatus
# from -> the statuses it may move to (None: the refund is being created).
TRANSITIONS: dict[RefundStatus | None, tuple[RefundStatus, ...]] = {
    None: (R.PENDING, R.SUCCEEDED, R.FAILED),
    R.PENDING: (R.PENDING, R.SUCCEEDED, R.FAILED),
}

# The event a refund emits when it enters a status (`refund.created` comes first, always).
STATUS_EVENTS: dict[RefundStatus, str] = {
    R.SUCCEEDED: "refund.succeeded",
    R.FAILED: "refund.failed",
}

# `failure_code` values: what a merchant does next differs for each.
FAILURE_CODES: dict[str, str] = {
    "declined": "The processor or the payer's bank refused the refund.",
    "expired_or_canceled_card": "The card is no longer valid; refund the payer another way.",
    "lost_or_stolen_card": "The card was reported lost or stolen; refund the payer another way.",
    "account_closed": "The payer's bank account is closed; refund the payer another way.",
    "insufficient_merchant_balance": "Your balance could not cover the refund; retry later.",
    "processor_error": "The processor could not process the refund; retry later.",
}


def check_refund_transition(current: RefundStatus | str | None, target: str) -> None:
    """A move outside the table is a bug in a connector or a caller, not a client error."""
    if target not in TRANSITIONS.get(current, ()):
        raise ValueError(f"a refund cannot move from {current} to {target}")
