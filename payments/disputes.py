"""Disputes (chargebacks) a processor reports (docs/processors.md "Disputes"; the spec reserves
the `dp_` prefix and the `dispute.*` events and leaves how a payment enters `disputed` to us).

A dispute is opened on a captured payment, refunded or not: the payment moves to `disputed`
through the status machine and `dispute.created` reports it, in one transaction (the
catalogue has no payment event for `disputed`, as it has none for `refunded`). A dispute
closes `won` or `lost`; the payment stays `disputed`, its history.
"""

from django.db import transaction
from django.utils import timezone

from api.renderers import format_timestamp
from events.services import emit_change
from payments import metrics
from payments.models import Dispute, Payment
from payments.states import Status, Trigger
from payments.writes import lock_for

DisputeStatus = Dispute.Status
# The events a dispute emits when it closes (`dispute.closed` last, whatever the outcome).
CLOSING_EVENTS = {
    DisputeStatus.WON: ["dispute.won", "dispute.closed"],
    DisputeStatus.LOST: ["dispute.lost", "dispute.closed"],
}


def dispute_to_dict(dispute: Dispute) -> dict:
    """A dispute as events carry it (`data.object`); no endpoint serves it in v1."""
    return {
        "id": dispute.id,
        "object": "dispute",
        "payment": dispute.payment_id,
        "amount": dispute.amount,
        "currency": dispute.currency,
        "reason": dispute.reason,
        "status": dispute.status,
        "livemode": dispute.livemode,
        "created": format_timestamp(dispute.created),
    }


def _emit(dispute: Dispute, types: list[str], before: dict | None) -> None:
    emit_change(dispute, after=dispute_to_dict(dispute), types=types, before=before)


def payment_dispute(
    *, payment: Payment, amount: int, reason: str, status: str = DisputeStatus.NEEDS_RESPONSE
) -> Dispute:
    """Open a dispute on a captured (or refunded) payment: the payment goes to `disputed`, the
    dispute is written and `dispute.created` emitted, in one transaction. A payment in no
    state to be disputed (not captured, already disputed, busy) is refused (ProcessingFailed)
    and nothing is written."""
    with transaction.atomic():
        locked = lock_for(payment, Trigger.DISPUTE)
        dispute = Dispute.objects.create(
            merchant=locked.merchant,
            livemode=locked.livemode,
            payment=locked,
            amount=amount,
            currency=locked.currency,
            reason=reason,
            status=status,
            created=timezone.now(),
        )
        locked.status = Status.DISPUTED
        locked.due_at = None
        locked.save(update_fields=["status", "due_at"])
        metrics.payment_entered(locked, Trigger.DISPUTE)
        _emit(dispute, ["dispute.created"], None)
    return dispute


def dispute_close(*, dispute: Dispute, won: bool) -> Dispute:
    """The processor decided: `won` or `lost`, with `dispute.won`/`dispute.lost` and
    `dispute.closed`. A dispute already closed is returned as it is (redeliveries, races)."""
    with transaction.atomic():
        locked = Dispute.objects.select_for_update().select_related("merchant").get(pk=dispute.pk)
        if locked.status in CLOSING_EVENTS:
            return locked
        before = dispute_to_dict(locked)
        locked.status = DisputeStatus.WON if won else DisputeStatus.LOST
        locked.save(update_fields=["status"])
        _emit(locked, CLOSING_EVENTS[locked.status], before)
    return locked
