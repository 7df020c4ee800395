"""The refunds operations in the OpenAPI description (docs/openapi.md)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from api.fields import MAX_ID_LENGTH, MetadataField
from api.openapi import ObjectName, exchange, named, previous_attributes_of, spec
from payments.openapi import AT, PAYMENT_ID, P
from refunds.serializers import RefundCreateInput
from refunds.states import FAILURE_CODES, RefundStatus

FAILURE_CODE_CHOICES = list(FAILURE_CODES)


class RefundFeeBreakdown(serializers.Serializer):
    fixed = serializers.IntegerField()


class RefundFee(serializers.Serializer):
    """What the refund cost (docs/payments.md "Fees"); `amount` is the sum of the breakdown."""

    amount = serializers.IntegerField()
    currency = serializers.CharField()
    breakdown = RefundFeeBreakdown()


@named
class Refund(serializers.Serializer):
    id = serializers.CharField(max_length=MAX_ID_LENGTH)
    object = ObjectName("refund")
    payment = serializers.CharField(max_length=MAX_ID_LENGTH)
    amount = serializers.IntegerField()
    currency = serializers.CharField()
    status = serializers.ChoiceField(choices=RefundStatus.choices)
    reason = serializers.CharField(allow_null=True, max_length=200)
    failure_code = serializers.ChoiceField(choices=FAILURE_CODE_CHOICES, allow_null=True)
    fee = RefundFee(allow_null=True)
    metadata = MetadataField()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()


previous_attributes_of(Refund, "RefundPreviousAttributes")

REFUND_CREATE_REQUEST = {"amount": 500, "reason": "requested_by_customer"}
REFUND_SUCCEEDED = {
    "id": "ref_01M85371KECNZAQY3WFPDKEJYZ",
    "object": "refund",
    "payment": PAYMENT_ID,
    "amount": 500,
    "currency": "eur",
    "status": "succeeded",
    "reason": "requested_by_customer",
    "failure_code": None,
    "fee": {"amount": 0, "currency": "eur", "breakdown": {"fixed": 0}},
    "metadata": {},
    "livemode": False,
    "created": AT,
}

refund_create = extend_schema(
    **spec(
        "Refund a payment",
        P + "POST /v1/payments/:id/refunds",
        "Refunds a captured payment in full (no `amount`) or in part; several refunds may "
        "add up to the amount captured.",
    ),
    request=RefundCreateInput,
    responses={201: Refund},
    examples=exchange("A partial refund", REFUND_CREATE_REQUEST, REFUND_SUCCEEDED),
)
refund_retrieve = extend_schema(
    **spec("Retrieve a refund", P + "GET /v1/refunds/:id"), responses={200: Refund}
)
