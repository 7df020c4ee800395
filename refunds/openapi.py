"""The refunds operations in the OpenAPI description (docs/openapi.md)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from api.openapi import ObjectName, exchange
from payments.openapi import AT, PAYMENT_ID
from refunds.serializers import RefundCreateInput
from refunds.states import RefundStatus


class Refund(serializers.Serializer):
    id = serializers.CharField()
    object = ObjectName("refund")
    payment = serializers.CharField()
    amount = serializers.IntegerField()
    currency = serializers.CharField()
    status = serializers.ChoiceField(choices=RefundStatus.choices)
    reason = serializers.CharField(allow_null=True)
    failure_code = serializers.CharField(allow_null=True)
    fee = serializers.DictField(allow_null=True)
    metadata = serializers.DictField()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()


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
    request=RefundCreateInput,
    responses={201: Refund},
    examples=exchange("A partial refund", REFUND_CREATE_REQUEST, REFUND_SUCCEEDED),
)
refund_retrieve = extend_schema(responses={200: Refund})
