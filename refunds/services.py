"""Writes for refunds, as operations in three steps like the payment's connector calls
(payments.operations; docs/refunds.md): a short transaction locks the payment (so two
refunds of one payment serialise and can never give back more than was captured), checks
what remains refundable and records the operation; the connector is asked with no
transaction open and no lock held; a second short transaction writes the refund and, when it
succeeded, the payment, with the events. While a refund operation is in flight the payment is
busy, so two refunds never both reach the processor.
"""

import datetime

from django.db import transaction
from django.utils import timezone

from api.errors import ProcessingFailed, ServiceError, ValidationFailed
from api.idempotency import answer_with_work
from events.services import emit_all, previous_attributes
from infra import failpoints
from payments.connectors import RefundAnswer, connector_of
from payments.fees import refund_fee_for
from payments.metrics import connector_call
from payments.models import Operation, Payment
from payments.operations import (
    is_busy,
    operation_abandon,
    operation_apply,
    operation_start,
    refuse_if_busy,
)
from payments.services import payment_lock, payment_refund_succeeded
from payments.states import Trigger, check_transition
from refunds.models import Refund
from refunds.selectors import pending_total
from refunds.serializers import refund_to_dict
from refunds.states import FAILURE_CODES, STATUS_EVENTS, RefundStatus, check_refund_transition

Kind = Operation.Kind
# The values a refund's operation keeps: enough to insert the refund with the answer.
REFUND_FIELDS = ("id", "merchant_id", "livemode", "payment_id", "amount", "currency", "reason")


def _emit(refund: Refund, types: list[str], before: dict | None, api_version: str | None):
    after = refund_to_dict(refund)
    emit_all(
        merchant=refund.merchant,
        livemode=refund.livemode,
        types=types,
        obj=after,
        previous_attributes=previous_attributes(before, after),
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
        refuse_if_busy(locked.pk)
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
        refund = Refund(
            merchant=locked.merchant,
            livemode=locked.livemode,
            payment=locked,
            amount=amount,
            currency=locked.currency,
            reason=reason,
            metadata=metadata or {},
            status=None,  # being created: the "from" state of refunds.states.TRANSITIONS
        )
        request = {field: getattr(refund, field) for field in REFUND_FIELDS}
        operation = operation_start(
            Kind.REFUND,
            payment_id=locked.pk,
            refund_id=refund.pk,
            request={**request, "metadata": refund.metadata},
            api_version=api_version,
        )
    return _operate(operation, locked, refund)


def refund_resolve(*, refund: Refund, api_version: str | None = None) -> Refund:
    """Ask the connector about a pending refund again and record what it settled to.

    Idempotent: a refund settled meanwhile (by a read or beat), or being settled right now,
    is returned as it is.
    """
    with transaction.atomic():
        payment = payment_lock(refund.payment)  # the payment first: the order create locks in
        locked = Refund.objects.select_for_update(of=("self",)).get(pk=refund.pk)
        if locked.status != RefundStatus.PENDING or is_busy(payment.pk):
            return locked
        operation = operation_start(
            Kind.RESOLVE_REFUND,
            payment_id=payment.pk,
            refund_id=locked.pk,
            request={},
            api_version=api_version,
        )
    return _operate(operation, payment, locked)


def _ask(operation: Operation, payment: Payment, refund: Refund) -> RefundAnswer:
    """The connector's answer, asked with no transaction open and no lock held; if it could
    not be asked, nothing was processed: the operation is abandoned and the error raised."""
    connector, key = connector_of(payment), operation.pk
    try:
        with connector_call(connector, operation.kind, payment.livemode):
            if operation.kind == Kind.REFUND:
                return connector.refund(payment=payment, refund=refund, key=key)
            return connector.resolve_refund(payment=payment, refund=refund, key=key)
    except ServiceError:
        operation_abandon(operation)
        raise


def _apply(operation: Operation, payment: Payment, refund: Refund, answer) -> Refund:
    """The answer, the refund, the payment's new amounts and the events in one transaction,
    under the payment's lock; a second writer (recovery racing the original request) finds
    the operation applied and gets the refund as it stands."""
    with transaction.atomic():
        locked = payment_lock(payment)
        if not operation_apply(operation):
            refund = Refund.objects.get(pk=refund.pk)
        elif operation.kind == Kind.REFUND:
            _insert(refund, locked, answer, operation.api_version)
        else:
            refund = _settle(refund, locked, answer, operation.api_version)
        answer_with_work(lambda: refund)
    return refund


def _insert(refund: Refund, payment: Payment, answer: RefundAnswer, api_version) -> None:
    refund.created = timezone.now()
    _take_answer(refund, payment, answer, refund.created)
    refund.save(force_insert=True)
    status_event = STATUS_EVENTS.get(refund.status)
    types = ["refund.created", status_event] if status_event else ["refund.created"]
    _emit(refund, types, None, api_version)


def _settle(refund: Refund, payment: Payment, answer: RefundAnswer, api_version) -> Refund:
    locked = Refund.objects.select_for_update(of=("self",)).get(pk=refund.pk)
    before = refund_to_dict(locked)
    _take_answer(locked, payment, answer, timezone.now())
    locked.save()
    if status_event := STATUS_EVENTS.get(locked.status):
        _emit(locked, [status_event], before, api_version)
    return locked


def _operate(operation: Operation, payment: Payment, refund: Refund) -> Refund:
    """Steps 2 and 3 of an operation step 1 recorded (failpoints as for payments)."""
    failpoints.reach(failpoints.OPERATION_STARTED)
    answer = _ask(operation, payment, refund)
    failpoints.reach(failpoints.CONNECTOR_ANSWERED)
    refund = _apply(operation, payment, refund, answer)
    failpoints.reach(failpoints.WORK_COMMITTED)
    return refund


def refund_operation_recover(operation: Operation) -> Refund:
    """Finish a refund operation left `started`: ask again with the same key and apply."""
    payment = Payment.objects.select_related("merchant").get(pk=operation.payment_id)
    if operation.kind == Kind.REFUND:
        values = operation.request
        refund = Refund(**{field: values[field] for field in REFUND_FIELDS})
        refund.metadata, refund.status = values["metadata"], None
    else:
        refund = Refund.objects.get(pk=operation.refund_id)
    return _operate(operation, payment, refund)


def refund_resolve_if_due(*, refund: Refund, api_version: str | None = None) -> Refund:
    """Resolve a pending refund whose time has come; anything else is returned as is."""
    if refund.due_at is None or refund.due_at > timezone.now():
        return refund
    return refund_resolve(refund=refund, api_version=api_version)
