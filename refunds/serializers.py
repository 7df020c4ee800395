"""Refunds on the wire: the input serializer and the one renderer of a refund, used for API
responses and event payloads alike."""

from api.fields import AmountField, MetadataField, StrictCharField
from api.renderers import format_timestamp
from api.validation import Input
from refunds.models import Refund


class RefundCreateInput(Input):
    amount = AmountField(required=False)  # omitted: everything that remains refundable
    reason = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    metadata = MetadataField(required=False)


def refund_to_dict(refund: Refund) -> dict:
    return {
        "id": refund.id,
        "object": "refund",
        "payment": refund.payment_id,
        "amount": refund.amount,
        "currency": refund.currency,
        "status": refund.status,
        "reason": refund.reason,
        "failure_code": refund.failure_code,
        "fee": refund.fee,
        "metadata": refund.metadata,
        "livemode": refund.livemode,
        "created": format_timestamp(refund.created),
    }
