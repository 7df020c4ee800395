"""Reads shared by views, admin and tasks."""

from django.utils import timezone

from api.errors import not_found
from api.ids import is_id
from events.models import Event
from payments.models import Payment
from payments.states import Status


def payment_get(*, merchant, livemode: bool, payment_id: str) -> Payment:
    """The merchant's payment in this mode, or 404 (another merchant's is indistinguishable).

    A path segment that is not a `pay_` id is not looked up: it cannot name a payment, and
    some (a NUL byte) cannot even be sent to PostgreSQL.
    """
    if not is_id(payment_id, "pay"):
        raise not_found("payment")
    payment = Payment.objects.filter(merchant=merchant, livemode=livemode, pk=payment_id).first()
    if payment is None:
        raise not_found("payment")
    return payment


def payment_list(*, merchant, livemode: bool, filters: dict):
    return Payment.objects.filter(merchant=merchant, livemode=livemode, **filters)


def due_payment_ids(*, statuses: tuple[Status, ...], limit: int) -> list[str]:
    """Ids of payments in `statuses` whose time has come, oldest deadline first."""
    return list(
        Payment.objects.filter(status__in=statuses, due_at__lte=timezone.now())
        .order_by("due_at")
        .values_list("pk", flat=True)[:limit]
    )


def resource_events(resource):
    """The events of a payment (or of any resource row with merchant, livemode and id)."""
    return Event.objects.filter(
        merchant_id=resource.merchant_id, livemode=resource.livemode, resource_id=resource.pk
    ).order_by("id")
