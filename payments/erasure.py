"""A customer's personal data erased on request (docs/data.md "Erasure").

Personal data sits in two places: the customer object a merchant sent with a payment (email,
name, phone, billing address), kept on the payment (`customer_details`) and in the request of
its create operation; and a wallet's `method.details.payer_account`, which the API renders, so
it is also in the payment's events and in stored idempotent answers. Erasure removes both
wherever they are and keeps the ids, amounts, statuses and every other field: the merchant's
records stay whole, and nobody can read who the customer was from them. A customer is named by
a `cus_` id, an email, or one of their payments (a customer given by name and phone only has
neither id nor email).
"""

import json

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import connection, transaction
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from api.models import IdempotencyRecord
from events.models import Event
from payments.models import Operation, Payment
from payments.selectors import customer_email

ERASED_MESSAGE = (
    "Erased the customer's personal data (email, name, phone, address, wallet payer account)."
)
PAYER_ACCOUNT = "payer_account"

# A payment still holding personal data: its customer object, or a wallet's payer account.
HOLDS_PERSONAL_DATA = Q(customer_details__isnull=False) | (
    Q(method_details__has_key=PAYER_ACCOUNT) & ~Q(method_details__payer_account=None)
)


def payments_of_customer(*, merchant_id: str, customer_id=None, email=None, payment_id=None):
    """The merchant's payments (both modes) still holding personal data that carry the
    customer's id or email (any case), or are the payment named."""
    if not customer_id and not email and not payment_id:
        raise ValueError("name the customer by id, email or one of their payments")
    match = Q()
    if customer_id:
        match |= Q(customer=customer_id)
    if email:
        match |= customer_email(email)  # through payment_customer_email_ci
    if payment_id:
        match |= Q(pk=payment_id)
    return Payment.objects.filter(match, HOLDS_PERSONAL_DATA, merchant_id=merchant_id)


@transaction.atomic
def customer_erase(
    *, merchant_id: str, customer_id=None, email=None, payment_id=None, operator
) -> list[str]:
    """Erases the customer's details from their payments, create operations, events and stored
    answers, records it in the admin's history under `operator` (a staff user); -> the payment
    ids changed."""
    payments = payments_of_customer(
        merchant_id=merchant_id, customer_id=customer_id, email=email, payment_id=payment_id
    )
    ids = list(payments.select_for_update().values_list("pk", flat=True))
    Payment.objects.filter(pk__in=ids).update(customer_details=None)
    for operation in Operation.objects.filter(
        payment_id__in=ids, request__has_key="customer_details"
    ):
        operation.request["customer_details"] = None
        operation.save(update_fields=["request"])
    _erase_payer_accounts(merchant_id, ids)
    content_type = ContentType.objects.get_for_model(Payment)
    LogEntry.objects.bulk_create(
        LogEntry(
            user_id=operator.pk,
            content_type=content_type,
            object_id=payment_id,
            object_repr=payment_id,
            action_flag=CHANGE,
            change_message=ERASED_MESSAGE,
        )
        for payment_id in ids
    )
    return ids


def _without_payer_account(payment_object: dict) -> bool:
    """Nulls a rendered payment's wallet payer account in place; -> whether it held one."""
    details = (payment_object.get("method") or {}).get("details") or {}
    if details.get(PAYER_ACCOUNT) is None:
        return False
    details[PAYER_ACCOUNT] = None
    return True


def _erase_payer_accounts(merchant_id: str, ids: list[str]) -> None:
    """A wallet's payer account, wherever the payment object was rendered: the payment, its
    events' copies, and stored idempotent answers (kept 24 hours, found by the payment's id)."""
    for payment in Payment.objects.filter(pk__in=ids, method_details__has_key=PAYER_ACCOUNT):
        payment.method_details[PAYER_ACCOUNT] = None
        payment.save(update_fields=["method_details"])
    for event in Event.objects.filter(merchant_id=merchant_id, resource_id__in=ids):
        if _without_payer_account(event.data.get("object") or {}):
            event.save(update_fields=["data"])
    for payment_id in ids:
        answers = IdempotencyRecord.objects.filter(
            _body_holds(payment_id), merchant_id=merchant_id, status__isnull=False
        )
        for record in answers:
            _erase_from_stored_answer(record)


def _body_holds(text: str) -> RawSQL:
    """A stored answer's bytes hold `text` (bytea on PostgreSQL, a blob on the embedded SQLite)."""
    search = (
        "position(%s in body) > 0" if connection.vendor == "postgresql" else "instr(body, %s) > 0"
    )
    return RawSQL(search, [text.encode()], output_field=BooleanField())


def _erase_from_stored_answer(record: IdempotencyRecord) -> None:
    try:
        answer = json.loads(bytes(record.body))
    except ValueError:
        return  # not a JSON answer: it renders no payment
    if isinstance(answer, dict) and _without_payer_account(answer):
        record.body = json.dumps(answer, separators=(",", ":")).encode()
        record.save(update_fields=["body"])
