"""Reads shared by views, admin and tasks."""

from django.db.models import Sum
from django.utils import timezone

from api.errors import not_found
from api.ids import is_id
from refunds.models import Refund
from refunds.states import RefundStatus


def refund_get(*, merchant, livemode: bool, refund_id: str) -> Refund:
    """The merchant's refund in this mode, or 404 (another merchant's is indistinguishable);
    a path segment that is not a `ref_` id is not looked up (see `payment_get`)."""
    if not is_id(refund_id, "ref"):
        raise not_found("refund")
    refund = (
        Refund.objects.select_related("payment__merchant")
        .filter(merchant=merchant, livemode=livemode, pk=refund_id)
        .first()
    )
    if refund is None:
        raise not_found("refund")
    return refund


def pending_total(payment) -> int:
    """What pending refunds of `payment` hold back from what remains refundable."""
    pending = Refund.objects.filter(payment=payment, status=RefundStatus.PENDING)
    return pending.aggregate(total=Sum("amount"))["total"] or 0


def due_refunds(*, limit: int):
    """Pending refunds whose time has come, oldest deadline first."""
    return (
        Refund.objects.filter(due_at__lte=timezone.now())
        .select_related("payment__merchant")
        .order_by("due_at")[:limit]
    )
