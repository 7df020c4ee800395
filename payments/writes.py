"""Status writes on a payment, inside the caller's transaction and under the payment's
lock (every writer locks it first, so racing writers serialise): the status machine checked
(payments.states), the row saved, its events emitted (spec "States and transitions": a
status a client can read has produced its event). Shared by the payment services, the
payment operations the runner applies (payments.steps) and refunds."""

import datetime

from django.utils import timezone

from api.errors import ProcessingFailed
from events.services import emit_all, previous_attributes
from payments import metrics
from payments.connectors import Authorization, Result
from payments.fees import fees_for
from payments.models import Payment, empty_outcome
from payments.operations import refuse_if_busy
from payments.serializers import payment_to_dict
from payments.states import LIFETIMES, STATUS_EVENTS, Status, Trigger, check_transition

AUTOMATIC = Payment.CaptureMethod.AUTOMATIC


def enter(payment: Payment, status: Status, now: datetime.datetime) -> None:
    payment.status = status
    lifetime = LIFETIMES.get(status)
    payment.due_at = now + lifetime if lifetime else None
    if status != Status.REQUIRES_ACTION:
        payment.next_action = None


def take_capture(payment: Payment, amount: int, now: datetime.datetime) -> None:
    """Captured: amount taken, and fees snapshotted once (never recalculated)."""
    payment.amount_captured = amount
    payment.captured_at = now
    payment.fees = fees_for(
        pricing=payment.merchant.pricing,
        amount=amount,
        currency=payment.currency,
        brand=(payment.card or {}).get("brand"),
    )


def take_authorization(payment: Payment, auth: Authorization, now: datetime.datetime) -> Status:
    """Write a connector's answer onto the payment; -> the status it lands in."""
    payment.outcome = {**empty_outcome(), **auth.outcome}
    if auth.details is not None:
        payment.method_details = auth.details
    if auth.card:
        payment.card = {**(payment.card or {}), **auth.card}
    if auth.result == Result.APPROVED:
        payment.authorized_at = now
        if payment.capture_method == AUTOMATIC:
            take_capture(payment, payment.amount, now)
            status = Status.CAPTURED
        else:
            status = Status.AUTHORIZED
    else:
        status = Status(auth.result)
    enter(payment, status, now)
    if status == Status.REQUIRES_ACTION:
        payment.next_action = {
            "type": "redirect",
            "redirect": {"url": auth.redirect_url, "return_url": payment.return_url},
        }
    if status == Status.PROCESSING:
        payment.due_at = now + auth.resolve_after
    return status


def status_event(payment: Payment) -> str | None:
    if payment.status == Status.CAPTURED and payment.amount_captured < payment.amount:
        return "payment.partially_captured"
    return STATUS_EVENTS.get(payment.status)


def emit(payment: Payment, types: list[str], before: dict | None, api_version: str | None):
    """The events of `types` about the payment as it is now, written and fanned out."""
    emit_all(**event_values(payment, types, before, api_version))


def event_values(payment: Payment, types: list[str], before: dict | None, api_version) -> dict:
    """The arguments of events.services.emit_all / new_events about the payment as it is."""
    after = payment_to_dict(payment)
    return {
        "merchant": payment.merchant,
        "livemode": payment.livemode,
        "types": types,
        "obj": after,
        "previous_attributes": previous_attributes(before, after),
        "api_version": api_version,
    }


def payment_lock(payment: Payment) -> Payment:
    """The payment row, locked until the caller's transaction ends (every writer locks it
    first, so racing writers serialise)."""
    return (
        Payment.objects.select_for_update(of=("self",))
        .select_related("merchant")
        .get(pk=payment.pk)
    )


def lifetime_over(payment: Payment, now: datetime.datetime) -> bool:
    """Its time in a status with a lifetime (pending, requires_action, authorized) has run out,
    whether or not the expiry sweep (every 60 s) has reached it yet."""
    return payment.status in LIFETIMES and payment.due_at is not None and payment.due_at <= now


def lock_for(payment: Payment, trigger: Trigger) -> Payment:
    """Inside the caller's transaction: the payment locked, idle (no connector call in
    flight) and in a status `trigger` starts from. One that lapsed since the caller looked is
    refused as expired (the sweep or the next read writes the expiry)."""
    locked = payment_lock(payment)
    refuse_if_busy(locked.pk)
    if trigger != Trigger.EXPIRE and lifetime_over(locked, timezone.now()):
        check_transition(Status.EXPIRED, trigger)
    check_transition(locked.status, trigger)
    return locked


def save_and_emit(locked: Payment, trigger: Trigger, before: dict, api_version) -> None:
    check_transition(before["status"], trigger, locked.status)
    locked.save()
    emit(locked, [status_event(locked)], before, api_version)
    metrics.payment_entered(locked, trigger)


def write_change(locked: Payment, trigger: Trigger, target: Status, api_version) -> None:
    now = timezone.now()
    if trigger == Trigger.EXPIRE and not lifetime_over(locked, now):
        raise ProcessingFailed("Not due yet.", code="payment_not_expirable")
    before = payment_to_dict(locked)
    if target == Status.CANCELED:
        locked.canceled_at = now
    enter(locked, target, now)
    save_and_emit(locked, trigger, before, api_version)


def payment_refund_succeeded(*, locked: Payment, amount: int) -> None:
    """Count a succeeded refund of `amount`: `amount_refunded` grows and the status moves to
    `partially_refunded` or, once everything captured is refunded, `refunded`.

    Runs inside the caller's transaction on a row it got from `payment_lock`. The spec's
    catalogue has no payment event for these statuses: the caller's `refund.succeeded`,
    written in the same transaction, reports the change (docs/refunds.md "Events").
    """
    refunded = locked.amount_refunded + amount
    target = Status.REFUNDED if refunded >= locked.amount_captured else Status.PARTIALLY_REFUNDED
    check_transition(locked.status, Trigger.REFUND, target)
    locked.amount_refunded = refunded
    locked.status = target
    locked.save(update_fields=["amount_refunded", "status"])
    metrics.payment_entered(locked, Trigger.REFUND)
