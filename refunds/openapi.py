"""The refunds operations in the OpenAPI description (docs/openapi.md)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from api.openapi import ObjectName
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


refund_create = extend_schema(request=RefundCreateInput, responses={201: Refund})
refund_retrieve = extend_schema(responses={200: Refund})
