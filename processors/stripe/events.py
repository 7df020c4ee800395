"""Stripe's events, applied (docs/processors.md "Processor webhooks"): each one finds our
object behind Stripe's and hands it to the service our own calls use (payments.services,
refunds.services, payments.disputes), so an answer that comes by webhook goes through the
same runner and status machine as one that comes in a response. An event never writes a
status itself: a payment or refund still waiting is asked about again (the connector asks
Stripe and maps the answer); one that has moved on is left alone, so a late or repeated
event never moves a status backwards.

`event_receive` keeps each event once (ProcessorEvent, by Stripe's id) after it is applied:
an event whose application failed for want of Stripe (a ServiceError of status 5xx, or a
payment busy with another call) raises, is not recorded, and Stripe's redelivery applies it.
"""

from collections.abc import Callable

from django.db import IntegrityError, transaction

from api.errors import ApiFailure, ProcessingFailed
from payments.disputes import DisputeStatus, dispute_close, payment_dispute
from payments.models import Dispute, Payment
from payments.services import payment_complete_action, payment_resolve
from payments.states import Status
from processors.models import ConnectorAccount, ProcessorEvent, ProcessorObject
from processors.objects import Kind, link
from refunds.models import Refund
from refunds.services import refund_resolve
from refunds.states import RefundStatus

# Results (ProcessorEvent.result) are a few words for support, cut to the column's size.
RESULT_CHARS = ProcessorEvent._meta.get_field("result").max_length
# Stripe's dispute statuses -> ours (an inquiry, `warning_*`, is a dispute not yet charged back).
DISPUTE_STATUSES = {
    "warning_needs_response": DisputeStatus.NEEDS_RESPONSE,
    "needs_response": DisputeStatus.NEEDS_RESPONSE,
    "warning_under_review": DisputeStatus.UNDER_REVIEW,
    "under_review": DisputeStatus.UNDER_REVIEW,
}
# A closed dispute: the merchant keeps the money (won; an inquiry closed unanswered) or not.
DISPUTE_WON = ("won", "warning_closed")


class EventDeferred(ApiFailure):
    """Not applied now, for want of Stripe or of the payment (busy with another call):
    answered 503 and not recorded, so Stripe sends it again later."""

    status, default_code = 503, "processor_event_deferred"


def event_receive(account: ConnectorAccount, event: dict) -> str:
    """Apply a verified event once; -> what it did. Raises EventDeferred (not recorded)."""
    if ProcessorEvent.objects.filter(account=account, event_id=event["id"]).exists():
        return "already received"
    result = event_apply(account, event)[:RESULT_CHARS]
    _record(account, event, result)
    return result


def _record(account: ConnectorAccount, event: dict, result: str) -> None:
    obj = event.get("data", {}).get("object", {})
    try:
        with transaction.atomic():
            ProcessorEvent.objects.create(
                account=account,
                event_id=event["id"],
                type=event.get("type", ""),
                object_id=obj.get("id", ""),
                result=result,
            )
    except IntegrityError:
        pass  # a concurrent delivery of the same event recorded it: applying twice is harmless


def event_apply(account: ConnectorAccount, event: dict) -> str:
    handler = HANDLERS.get(event.get("type"))
    if handler is None:
        return "not handled"
    try:
        return handler(account, event["data"]["object"])
    except ProcessingFailed as exc:
        if exc.code == "payment_in_progress":
            raise EventDeferred(exc.message) from exc
        return f"refused: {exc.code}"  # e.g. no_route: nothing we can apply, ever
    except ApiFailure as exc:
        raise EventDeferred(exc.message) from exc


# --- payments ------------------------------------------------------------------------------


def _linked_payment(account: ConnectorAccount, **lookup) -> Payment | None:
    row = ProcessorObject.objects.filter(account=account, kind=Kind.PAYMENT, **lookup).first()
    if row is None:
        return None
    return Payment.objects.select_related("merchant").filter(pk=row.our_id).first()


def payment_settle(payment: Payment) -> str:
    """A payment still waiting on Stripe is asked about again, through its service; one that
    has moved on is left alone (the status never moves backwards)."""
    before = payment.status
    try:
        if before == Status.PROCESSING:
            payment = payment_resolve(payment=payment)
        elif before == Status.REQUIRES_ACTION:
            payment = payment_complete_action(payment=payment, details={"stripe": "webhook"})
        else:
            return f"{payment.id} already {before}: nothing to do"
    except ProcessingFailed as exc:
        if exc.code not in ("payment_not_advanceable", "payment_not_awaiting_action"):
            raise
        payment.refresh_from_db()  # moved on (or expired) meanwhile
        return f"{payment.id} already {payment.status}: nothing to do"
    return f"{payment.id} {before} -> {payment.status}"


def _payment_intent(account: ConnectorAccount, intent: dict) -> str:
    payment = _linked_payment(account, processor_id=intent["id"])
    if payment is None:
        return f"unknown PaymentIntent {intent['id']}"
    return payment_settle(payment)


# --- refunds -------------------------------------------------------------------------------


def _refund_ids(obj: dict) -> list[str]:
    """A refund event names its refund; a charge event, the charge's refunds."""
    if obj.get("object") == "charge":
        return [refund["id"] for refund in (obj.get("refunds") or {}).get("data", [])]
    return [obj["id"]]


def _refund_settle(account: ConnectorAccount, stripe_refund_id: str) -> str:
    row = ProcessorObject.objects.filter(
        account=account, kind=Kind.REFUND, processor_id=stripe_refund_id
    ).first()
    refund = row and Refund.objects.select_related("payment").filter(pk=row.our_id).first()
    if not refund:
        return f"unknown refund {stripe_refund_id}"
    if refund.status != RefundStatus.PENDING:
        return f"{refund.id} already {refund.status}"
    refund = refund_resolve(refund=refund)
    return f"{refund.id} pending -> {refund.status}"


def _refunds(account: ConnectorAccount, obj: dict) -> str:
    results = [_refund_settle(account, refund_id) for refund_id in _refund_ids(obj)]
    return "; ".join(results) or "no refunds named"


# --- disputes ------------------------------------------------------------------------------


def _disputed_payment(account: ConnectorAccount, stripe_dispute: dict) -> Payment | None:
    """Through its PaymentIntent, or its charge (kept on the payment's link)."""
    if intent := stripe_dispute.get("payment_intent"):
        if payment := _linked_payment(account, processor_id=intent):
            return payment
    if charge := stripe_dispute.get("charge"):
        return _linked_payment(account, extra__charge=charge)
    return None


def _our_dispute(account: ConnectorAccount, stripe_dispute_id: str) -> Dispute | None:
    row = ProcessorObject.objects.filter(
        account=account, kind=Kind.DISPUTE, processor_id=stripe_dispute_id
    ).first()
    return row and Dispute.objects.filter(pk=row.our_id).first()


def _dispute_open(account: ConnectorAccount, stripe_dispute: dict) -> tuple[Dispute | None, str]:
    """Our dispute for Stripe's, opened on its payment if it is new: -> (it, what happened)."""
    if dispute := _our_dispute(account, stripe_dispute["id"]):
        return dispute, f"{dispute.id} already known"
    payment = _disputed_payment(account, stripe_dispute)
    if payment is None:
        return None, f"unknown charge {stripe_dispute.get('charge')}"
    if payment.status == Status.PROCESSING:
        payment_settle(payment)  # the dispute came before the payment's own event
        payment.refresh_from_db()
    with transaction.atomic():
        dispute = payment_dispute(
            payment=payment,
            amount=stripe_dispute["amount"],
            reason=stripe_dispute.get("reason") or "general",
            status=DISPUTE_STATUSES.get(stripe_dispute.get("status"), DisputeStatus.NEEDS_RESPONSE),
        )
        link(Kind.DISPUTE, dispute.id, account, stripe_dispute["id"])
    return dispute, f"{dispute.id} opened: {payment.id} disputed"


def _dispute_created(account: ConnectorAccount, stripe_dispute: dict) -> str:
    return _dispute_open(account, stripe_dispute)[1]


def _dispute_closed(account: ConnectorAccount, stripe_dispute: dict) -> str:
    """Opened first if its `created` event has not come (out of order), then closed."""
    dispute, opened = _dispute_open(account, stripe_dispute)
    if dispute is None:
        return opened
    dispute = dispute_close(dispute=dispute, won=stripe_dispute.get("status") in DISPUTE_WON)
    return f"{opened}; {dispute.id} {dispute.status}"


HANDLERS: dict[str, Callable[[ConnectorAccount, dict], str]] = {
    **dict.fromkeys(
        (
            "payment_intent.succeeded",
            "payment_intent.payment_failed",
            "payment_intent.amount_capturable_updated",
            "payment_intent.processing",
            "payment_intent.canceled",
        ),
        _payment_intent,
    ),
    **dict.fromkeys(
        ("charge.refunded", "charge.refund.updated", "refund.updated", "refund.failed"), _refunds
    ),
    "charge.dispute.created": _dispute_created,
    "charge.dispute.closed": _dispute_closed,
}
