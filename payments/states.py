"""The payment status machine (spec "States and transitions > Payment transitions").

`TRANSITIONS` is the spec's table as data, one row per trigger; `check_transition` is the one
function every status change goes through. Read the two side by side: a row here is a row (or
a group of rows with the same trigger) there.
"""

import datetime
from dataclasses import dataclass
from enum import StrEnum

from django.db import models

from api.errors import ProcessingFailed


class Status(models.TextChoices):
    PENDING = "pending"
    REQUIRES_ACTION = "requires_action"
    PROCESSING = "processing"
    AUTHORIZED = "authorized"
    CAPTURED = "captured"
    PARTIALLY_REFUNDED = "partially_refunded"
    REFUNDED = "refunded"
    DISPUTED = "disputed"
    DECLINED = "declined"
    FAILED = "failed"
    CANCELED = "canceled"
    EXPIRED = "expired"


class Trigger(StrEnum):
    CREATE = "create"  # POST /v1/payments
    CONFIRM = "confirm"  # POST /v1/payments/:id/confirm
    PAYER_ACTION = "payer_action"  # the payer finished the challenge / redirect
    RESOLVE = "resolve"  # an asynchronous rail settled (read after resolve time, advance, beat)
    CAPTURE = "capture"  # POST /v1/payments/:id/captures
    CANCEL = "cancel"  # POST /v1/payments/:id/cancel
    EXPIRE = "expire"  # the lifetime of pending, requires_action or authorized elapsed
    REFUND = "refund"  # POST /v1/payments/:id/refunds (refunds.services)
    DISPUTE = "dispute"  # the processor reports a chargeback (payments.disputes)


S = Status
# Where an authorisation attempt can land (create with a token, confirm, payer action).
AUTHORIZATION_OUTCOMES = (
    S.CAPTURED,
    S.AUTHORIZED,
    S.REQUIRES_ACTION,
    S.PROCESSING,
    S.DECLINED,
    S.FAILED,
)


@dataclass(frozen=True)
class Transition:
    sources: tuple[Status | None, ...]  # None: the payment does not exist yet
    trigger: Trigger
    targets: tuple[Status, ...]


TRANSITIONS: tuple[Transition, ...] = (
    Transition((None,), Trigger.CREATE, (S.PENDING, *AUTHORIZATION_OUTCOMES)),
    Transition((S.PENDING,), Trigger.CONFIRM, AUTHORIZATION_OUTCOMES),
    Transition((S.PENDING, S.REQUIRES_ACTION, S.AUTHORIZED), Trigger.EXPIRE, (S.EXPIRED,)),
    # Approve gives the planned outcome (possibly a decline); Decline declines; Timeout fails.
    Transition(
        (S.REQUIRES_ACTION,),
        Trigger.PAYER_ACTION,
        (S.CAPTURED, S.AUTHORIZED, S.PROCESSING, S.DECLINED, S.FAILED),
    ),
    Transition((S.PROCESSING,), Trigger.RESOLVE, (S.CAPTURED, S.AUTHORIZED, S.DECLINED, S.FAILED)),
    # A refused capture leaves the payment authorized: no transition, a capture_failed event.
    Transition((S.AUTHORIZED,), Trigger.CAPTURE, (S.CAPTURED,)),
    # A refused void leaves the payment as it was: no transition.
    Transition((S.PENDING, S.REQUIRES_ACTION, S.AUTHORIZED), Trigger.CANCEL, (S.CANCELED,)),
    Transition(
        (S.CAPTURED, S.PARTIALLY_REFUNDED), Trigger.REFUND, (S.PARTIALLY_REFUNDED, S.REFUNDED)
    ),
    # Not shown by the spec (decision, docs/processors.md "Disputes"): money taken can be
    # disputed, refunded or not ("A refund does not prevent a later dispute"); nothing leaves.
    Transition((S.CAPTURED, S.PARTIALLY_REFUNDED, S.REFUNDED), Trigger.DISPUTE, (S.DISPUTED,)),
)
_TABLE: dict[Trigger, Transition] = {row.trigger: row for row in TRANSITIONS}

# The error a client gets when the payment is not in a state the trigger starts from.
REFUSAL_CODES: dict[Trigger, str] = {
    Trigger.CONFIRM: "payment_not_confirmable",
    Trigger.CAPTURE: "payment_not_capturable",
    Trigger.CANCEL: "payment_not_cancelable",
    Trigger.RESOLVE: "payment_not_advanceable",
    Trigger.REFUND: "payment_not_refundable",
    Trigger.PAYER_ACTION: "payment_not_awaiting_action",
    Trigger.EXPIRE: "payment_not_expirable",
    Trigger.DISPUTE: "payment_not_disputable",  # never a client's: the processor's event
}

# Lifetimes (spec "Limits"): how long a payment may stay in a status before it expires.
LIFETIMES: dict[Status, datetime.timedelta] = {
    S.PENDING: datetime.timedelta(hours=1),
    S.REQUIRES_ACTION: datetime.timedelta(hours=1),
    S.AUTHORIZED: datetime.timedelta(days=7),
}

# The event each status reports when a payment enters it (spec "Events > Event types").
STATUS_EVENTS: dict[Status, str] = {
    S.REQUIRES_ACTION: "payment.requires_action",
    S.PROCESSING: "payment.processing",
    S.AUTHORIZED: "payment.authorized",
    S.CAPTURED: "payment.captured",
    S.DECLINED: "payment.declined",
    S.FAILED: "payment.failed",
    S.CANCELED: "payment.canceled",
    S.EXPIRED: "payment.expired",
}


def can(current: Status | str | None, trigger: Trigger) -> bool:
    return current in _TABLE[trigger].sources


def check_transition(
    current: Status | str | None, trigger: Trigger, target: Status | None = None
) -> None:
    """Refuse (422, the trigger's code) when `trigger` cannot start from `current`.

    A target outside the row is a bug in the caller, not a client error.
    """
    row = _TABLE[trigger]
    if current not in row.sources:
        raise ProcessingFailed(
            f"This payment cannot be {_PAST[trigger]}: its status is {current}.",
            code=REFUSAL_CODES[trigger],
        )
    if target is not None and target not in row.targets:
        raise ValueError(f"{trigger} cannot move a payment from {current} to {target}")


_PAST = {
    Trigger.CREATE: "created",
    Trigger.CONFIRM: "confirmed",
    Trigger.PAYER_ACTION: "completed by the payer",
    Trigger.RESOLVE: "advanced",
    Trigger.CAPTURE: "captured",
    Trigger.CANCEL: "canceled",
    Trigger.EXPIRE: "expired",
    Trigger.REFUND: "refunded",
    Trigger.DISPUTE: "disputed",
}
