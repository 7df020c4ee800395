"""A customer's personal data erased on request (docs/data.md "Erasure").

Personal data sits in one place: the customer object a merchant sent with a payment (email,
name, phone, billing address), kept on the payment (`customer_details`) and in the request of
its create operation. What the API renders (the payment object, so every event's copy and
every stored idempotent answer) names the customer by its `cus_` id only. Erasure removes the
details and keeps the id, amounts, statuses and every other field: the merchant's records
stay whole, and nobody can read who the customer was from them.
"""

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Q

from payments.models import Operation, Payment
from payments.selectors import customer_email

ERASED_MESSAGE = "Erased the customer's personal data (email, name, phone, address)."


def payments_of_customer(*, merchant_id: str, customer_id=None, email=None):
    """The merchant's payments (both modes) that carry the customer's id or email (any case)."""
    if not customer_id and not email:
        raise ValueError("name the customer by id or email")
    match = Q()
    if customer_id:
        match |= Q(customer=customer_id)
    if email:
        match |= customer_email(email)  # through payment_customer_email_ci
    return Payment.objects.filter(match, merchant_id=merchant_id, customer_details__isnull=False)


@transaction.atomic
def customer_erase(*, merchant_id: str, customer_id=None, email=None, operator) -> list[str]:
    """Erases the customer's details from their payments and create operations, records it in
    the admin's history under `operator` (a staff user); -> the payment ids changed."""
    payments = payments_of_customer(merchant_id=merchant_id, customer_id=customer_id, email=email)
    ids = list(payments.select_for_update().values_list("pk", flat=True))
    Payment.objects.filter(pk__in=ids).update(customer_details=None)
    for operation in Operation.objects.filter(
        payment_id__in=ids, request__has_key="customer_details"
    ):
        operation.request["customer_details"] = None
        operation.save(update_fields=["request"])
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
