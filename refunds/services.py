"""Writes for refunds. Each action is one transaction that locks the payment row first (so
two refunds of one payment serialise and can never give back more than was captured), asks
the connector, writes the refund and, when it succeeded, the payment, and emits the events
(docs/refunds.md).

The connector is asked under the payment's lock, like capture and void: the simulator
answers in-process (docs/payments.md "Concurrency").
"""

import datetime

from django.db import transaction
from django.utils import timezone

from api.errors import ProcessingFailed, ValidationFailed
from events.services import emit_all
from payments.connectors import RefundAnswer, connector_of
from payments.fees import refund_fee_for
from payments.models import Payment
from payments.services import payment_lock, payment_refund_succeeded
from payments.states import Trigger, check_transition
from refunds.models import Refund
from refunds.selectors import pending_total
from refunds.serializers import refund_to_dict
from refunds.states import FAILURE_CODES, STATUS_EVENTS, RefundStatus, check_refund_transition


def _emit(refund: Refund, types: list[str], before: dict | None, api_version: str | None):
    after = refund_to_dict(refund)
    emit_all(
        merchant=refund.merchant,
        livemode=refund.livemode,
        types=types,
        obj=after,
        previous_attributes={
            key: value for key, value in (before or {}).items() if after[key] != value
        },
        api_version=api_version,
    )


def _take_answer(
    refund: Refund, payment: Payment, answer: RefundAnswer, now: datetime.datetime
) -> None:
    """Write the connector's answer onto the refund (and, on success, onto the payment)."""
    check_refund_transition(refund.status, answer.status)
    refund.status = answer.status
    refund.due_at = None
    if answer.status == RefundStatus.PENDING:
        refund.due_at = now + answer.resolve_after
    elif answer.status == RefundStatus.FAILED:
        if answer.failure_code not in FAILURE_CODES:
            raise ValueError(f"unknown refund failure_code {answer.failure_code!r}")
        refund.failure_code = answer.failure_code
    else:
        refund.fee = refund_fee_for(pricing=payment.merchant.pricing, currency=refund.currency)
        payment_refund_succeeded(locked=payment, amount=refund.amount)


def _refundable(payment: Payment) -> int:
    """Captured, less what succeeded and what pending refunds hold back."""
    held = pending_total(payment)
    remaining = payment.amount_captured - payment.amount_refunded - held
    if remaining <= 0:
        raise ProcessingFailed(
            f"Nothing remains refundable on {payment.id}: {payment.amount_refunded} refunded "
            f"and {held} in pending refunds of {payment.amount_captured} captured.",
            code="payment_not_refundable",
        )
    return remaining


def refund_create(
    *,
    payment: Payment,
    amount: int | None = None,
    reason: str | None = None,
    metadata: dict | None = None,
    api_version: str | None = None,
) -> Refund:
    """Refund `amount` (omitted: everything remaining) of a captured payment.

    The refund is returned whatever the connector answered: `succeeded`, `pending`, or
    `failed` with its `failure_code`. A payment that is not captured or has nothing left is
    422 `payment_not_refundable`; more than what remains is 400 `amount_exceeds_refundable`.
    """
    with transaction.atomic():
        locked = payment_lock(payment)
        check_transition(locked.status, Trigger.REFUND)
        remaining = _refundable(locked)
        if amount is None:
            amount = remaining
        elif amount > remaining:
            raise ValidationFailed(
                f"amount {amount} is above what remains refundable on {locked.id}: {remaining}.",
                code="amount_exceeds_refundable",
                param="amount",
            )
        now = timezone.now()
        refund = Refund(
            merchant=locked.merchant,
            livemode=locked.livemode,
            payment=locked,
            amount=amount,
            currency=locked.currency,
            reason=reason,
            metadata=metadata or {},
            status=None,  # being created: the "from" state of refunds.states.TRANSITIONS
            created=now,
        )
        answer = connector_of(locked).refund(payment=locked, refund=refund)
        _take_answer(refund, locked, answer, now)
        refund.save(force_insert=True)
        status_event = STATUS_EVENTS.get(refund.status)
        types = ["refund.created", status_event] if status_event else ["refund.created"]
        _emit(refund, types, None, api_version)
    return refund


def refund_resolve(*, refund: Refund, api_version: str | None = None) -> Refund:
    """Ask the connector about a pending refund again and record what it settled to.

    Idempotent: a refund settled meanwhile (by a read or beat) is returned as it is.
    """
    with transaction.atomic():
        payment = payment_lock(refund.payment)  # the payment first: the order create locks in
        locked = Refund.objects.select_for_update(of=("self",)).get(pk=refund.pk)
        if locked.status != RefundStatus.PENDING:
            return locked
        before = refund_to_dict(locked)
        answer = connector_of(payment).resolve_refund(payment=payment, refund=locked)
        _take_answer(locked, payment, answer, timezone.now())
        locked.save()
        if status_event := STATUS_EVENTS.get(locked.status):
            _emit(locked, [status_event], before, api_version)
    return locked


def refund_resolve_if_due(*, refund: Refund, api_version: str | None = None) -> Refund:
    """Resolve a pending refund whose time has come; anything else is returned as is."""
    if refund.due_at is None or refund.due_at > timezone.now():
        return refund
    return refund_resolve(refund=refund, api_version=api_version)
