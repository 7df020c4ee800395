"""Writes for refunds, as connector operations the payments' runner runs (payments.runner;
docs/refunds.md): a short transaction locks the payment (so two refunds of one payment
serialise and can never give back more than was captured), checks what remains refundable
and records the operation; the connector is asked with no transaction open and no lock held;
a second short transaction writes the refund and, when it succeeded, the payment, with the
events (`RefundWork.apply`). While a refund operation is in flight the payment is busy, so
two refunds never both reach the processor.
"""

import datetime
import logging
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from api.errors import ProcessingFailed, ServiceError, ValidationFailed
from api.idempotency import Claim
from events.services import emit_change
from payments.connectors import Connector, RefundAnswer
from payments.fees import refund_fee_for
from payments.models import Operation, Payment
from payments.operations import (
    ask_again_at,
    ask_again_later,
    is_busy,
    operation_apply,
    refuse_if_busy,
)
from payments.runner import operation_start, resumable, run
from payments.states import Trigger, check_transition
from payments.writes import payment_lock, payment_refund_succeeded
from refunds.models import Refund
from refunds.selectors import pending_total
from refunds.serializers import refund_to_dict
from refunds.states import FAILURE_CODES, STATUS_EVENTS, RefundStatus, check_refund_transition

Kind = Operation.Kind
log = logging.getLogger(__name__)
# The values a refund's operation keeps: enough to insert the refund with the answer.
REFUND_FIELDS = ("id", "merchant_id", "livemode", "payment_id", "amount", "currency", "reason")


def _emit(refund: Refund, types: list[str], before: dict | None, api_version: str | None):
    emit_change(
        refund, after=refund_to_dict(refund), types=types, before=before, api_version=api_version
    )


def _take_answer(
    refund: Refund, payment: Payment, answer: RefundAnswer, now: datetime.datetime
) -> None:
    """Write the connector's answer onto the refund (and, on success, onto the payment)."""
    asked_again = refund.status == RefundStatus.PENDING
    check_refund_transition(refund.status, answer.status)
    refund.status = answer.status
    refund.due_at = None
    if answer.status == RefundStatus.PENDING:
        refund.due_at = now + answer.resolve_after
        if asked_again:  # still pending: the waits double (as a payment still processing)
            refund.due_at = max(refund.due_at, ask_again_at(refund.created, now))
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


@dataclass
class RefundWork:
    """A refund operation for the runner: `refund` as the connector call sees it (a new
    one's not stored yet)."""

    payment: Payment
    refund: Refund

    def ask(self, connector: Connector, operation: Operation) -> RefundAnswer:
        payment, refund, key = self.payment, self.refund, operation.pk
        if operation.kind == Kind.REFUND:
            return connector.refund(payment=payment, refund=refund, key=key)
        return connector.resolve_refund(payment=payment, refund=refund, key=key)

    def abandoned(self, operation: Operation) -> None:
        """Nothing was taken: a refund holds nothing back until it is written."""

    def apply_alone(self, operation: Operation, answer: RefundAnswer, claim: Claim | None):
        return None  # a refund's apply locks its payment: always in a transaction

    def apply(self, operation: Operation, answer: RefundAnswer, claim: Claim | None) -> Refund:
        """The answer, the refund, the payment's new amounts and the events under the
        payment's lock; a second writer (recovery racing the original request) finds the
        operation applied and gets the refund as it stands."""
        locked = payment_lock(self.payment)
        if not operation_apply(operation):
            return Refund.objects.get(pk=self.refund.pk)
        if operation.kind == Kind.REFUND:
            _insert(self.refund, locked, answer, operation.api_version)
            return self.refund
        return _settle(self.refund, locked, answer, operation.api_version)


def refund_operation_recover(operation: Operation, claim: Claim | None = None) -> Refund:
    """Finish a refund operation left `started`: ask again with the same key and apply."""
    payment = Payment.objects.select_related("merchant").get(pk=operation.payment_id)
    if operation.kind == Kind.REFUND:
        values = operation.request
        refund = Refund(**{field: values[field] for field in REFUND_FIELDS})
        refund.metadata, refund.status = values["metadata"], None
    else:
        refund = Refund.objects.get(pk=operation.refund_id)
    return run(operation, RefundWork(payment, refund), claim)


@resumable(refund_operation_recover)
def refund_create(
    *,
    payment: Payment,
    amount: int | None = None,
    reason: str | None = None,
    metadata: dict | None = None,
    api_version: str | None = None,
    claim: Claim | None = None,
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
            payment=locked,
            refund_id=refund.pk,
            request={**request, "metadata": refund.metadata},
            api_version=api_version,
            claim=claim,
        )
    return run(operation, RefundWork(locked, refund), claim)


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
            payment=payment,
            refund_id=locked.pk,
            request={},
            api_version=api_version,
            claim=None,
        )
    return run(operation, RefundWork(payment, locked), None)


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


def refund_resolve_if_due(*, refund: Refund, api_version: str | None = None) -> Refund:
    """Resolve a pending refund whose time has come; anything else is returned as is."""
    if refund.due_at is None or refund.due_at > timezone.now():
        return refund
    return refund_resolve(refund=refund, api_version=api_version)


def refund_ask_again_later(refund: Refund) -> None:
    """The processor could not be asked about a due pending refund (beat's sweep): the next
    ask waits (payments.operations.ask_again_at). One settled meanwhile is left alone."""
    now = timezone.now()
    ask_again_later(refund, "due_at", status=RefundStatus.PENDING, due_at__lte=now)


def refund_as_of_now(*, refund: Refund, api_version: str | None = None) -> Refund:
    """The refund as time has already made it, for a read: a pending one past its time is
    settled before anyone sees it. A read answers with what is stored when the connector
    cannot settle it now (as payments.services.payment_as_of_now): it stays pending and due,
    and beat's sweep asks again (nothing is left `started`: payments.runner)."""
    try:
        return refund_resolve_if_due(refund=refund, api_version=api_version)
    except ServiceError as exc:
        log.warning("read shows %s pending: %s (%s)", refund.pk, exc.message, exc.code)
        return refund
