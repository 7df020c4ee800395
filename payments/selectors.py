"""Reads shared by views, admin and tasks."""

import re
from decimal import Decimal

from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Lower
from django.db.models.lookups import Exact
from django.utils import timezone

from api.currencies import CURRENCY_EXPONENTS
from api.errors import not_found
from api.fields import MAX_AMOUNT
from api.ids import created_window, is_id
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
    """The merchant's payments in this mode matching `filters` (parse_list_filters)."""
    filters = dict(filters)
    window = created_window(
        "pay", filters.pop("created__gte", None), filters.pop("created__lt", None)
    )
    return Payment.objects.filter(window, merchant=merchant, livemode=livemode, **filters)


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


LAST4 = re.compile(r"\d{4}")
AMOUNT = re.compile(r"\d+\.\d{1,3}")  # with its decimal point: 120.00


def payment_search(term: str) -> Q:
    """What a support agent types, as conditions each backed by an index (docs/back-office.md
    "Finding"): a pay_ id, a cus_ id, a customer's email, a card's last four digits, an amount
    with its decimal point (120.00), else a reference; all exact, never LIKE '%…%'."""
    if term.startswith("pay_"):
        return Q(pk=term)
    if term.startswith("cus_"):
        return Q(customer=term)
    if "@" in term:
        return customer_email(term)
    found = Q(reference=term)
    if LAST4.fullmatch(term):
        found |= Q(card__last4=term)
    if AMOUNT.fullmatch(term):
        found |= Q(amount__in=_minor_units(Decimal(term)))
    return found


def customer_email(term: str) -> Q:
    """The customer's email in any case ("Ada@Example.test" finds "ada@example.test"), read
    through payment_customer_email_ci, an index on the same lowercased expression. A reference
    stays exact: it is the merchant's own key, copied rather than typed."""
    return Q(Exact(Lower(KeyTextTransform("email", "customer_details")), term.lower()))


def _minor_units(major: Decimal) -> list[int]:
    """120.00 -> the minor units it is in each exponent that can write it (12000, 120000); none
    above the largest amount a payment can have (a bigint overflow would be a 500)."""
    return sorted(
        {
            int(major.scaleb(exponent))
            for exponent in set(CURRENCY_EXPONENTS.values())
            if major.scaleb(exponent) == major.scaleb(exponent).to_integral_value()
            and major.scaleb(exponent) <= MAX_AMOUNT
        }
    )
