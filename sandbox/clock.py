"""Sandbox time travel: one test payment's clock moved forward (docs/sandbox.md).

A payment's timed transitions (pending and requires_action expire after an hour, authorized
after 7 days, processing resolves after 30 s) all hang on one deadline, `due_at`. Moving the
clock by N seconds makes every transition due within N seconds happen now, one after the
other, through the same services beat and reads use (`payments.services.payment_as_of_now`),
so the same events and webhooks follow; what is left of N brings the next deadline closer.
Only this payment's clock moves: nothing global, nothing of another payment.

The same for a test event's webhooks: its retries waiting for their time are made due now, so
a merchant sees the retry schedule run through to the dead letter in minutes.
"""

import datetime

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from api.idempotency import Claim, answer_store
from events.models import Event
from payments.models import Payment
from payments.services import payment_as_of_now
from webhooks.models import Delivery
from webhooks.tasks import enqueue_deliveries

MAX_TRAVEL = datetime.timedelta(days=30)
# Transitions one move can chain at most: processing -> authorized -> expired is the longest.
MAX_TRANSITIONS = 3


def payment_advance_clock(
    *,
    payment: Payment,
    by: datetime.timedelta,
    api_version: str | None = None,
    claim: Claim | None = None,
) -> Payment:
    """Moves `payment`'s clock forward by `by`; -> the payment as that time makes it. The
    travel, every transition it makes due and the request's answer (`claim`) commit together:
    a request that dies midway has travelled nowhere, and its retry travels once. (Only the
    simulator answers here, so its calls may run inside the transaction.)"""
    with transaction.atomic():
        payment = _travel(payment, by, api_version)
        answer_store(claim, payment)
    return payment


def _travel(payment: Payment, by: datetime.timedelta, api_version: str | None) -> Payment:
    _record_travel(payment, by)
    remaining = by
    for _ in range(MAX_TRANSITIONS):
        payment.refresh_from_db()
        now = timezone.now()
        if payment.due_at is None or payment.due_at - now > remaining:
            break
        remaining -= max(payment.due_at - now, datetime.timedelta(0))
        _move_deadline(payment, to=now)
        payment = payment_as_of_now(payment=payment, api_version=api_version)
    payment.refresh_from_db()
    if payment.due_at is not None and remaining:
        _move_deadline(payment, to=payment.due_at - remaining)
        payment.refresh_from_db()
    return payment


def _record_travel(payment: Payment, by: datetime.timedelta) -> None:
    """Before any transition, so the payment and every event it emits say so."""
    Payment.objects.filter(pk=payment.pk).update(
        clock_advanced_by=Coalesce(F("clock_advanced_by"), 0) + int(by.total_seconds())
    )


def _move_deadline(payment: Payment, *, to: datetime.datetime) -> None:
    """Only while the payment is still in the status whose deadline it is: a change made
    meanwhile (a capture, beat) keeps the deadline it set."""
    Payment.objects.filter(pk=payment.pk, status=payment.status).update(due_at=to)
    payment.due_at = to


def event_retries_now(*, event: Event) -> list[str]:
    """The event's pending deliveries that wait for a retry (none in flight) are due now and
    nudged; -> their ids. An attempt that fails schedules the next retry as usual."""
    waiting = Delivery.objects.filter(event=event).waiting(timezone.now())
    delivery_ids = list(waiting.values_list("pk", flat=True))
    Delivery.objects.filter(pk__in=delivery_ids).update(next_attempt_at=timezone.now())
    enqueue_deliveries(delivery_ids)
    return delivery_ids
