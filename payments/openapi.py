"""The payments operations in the OpenAPI description (docs/openapi.md): request bodies are the
input serializers themselves; responses declare what payment_to_dict / token_to_dict return
(tests/test_openapi.py compares the two)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers

from api.openapi import PAGE_PARAMETERS, ObjectName, error_responses, list_of
from payments.models import Payment as PaymentModel
from payments.models import Token as TokenModel
from payments.serializers import (
    LIST_FILTERS,
    CaptureInput,
    PaymentConfirmInput,
    PaymentCreateInput,
)
from payments.states import Status

TIMESTAMP = {"allow_null": True}


class PaymentMethodDetails(serializers.Serializer):
    type = serializers.CharField()
    card = serializers.DictField(allow_null=True)
    wallet = serializers.CharField(required=False, help_text="Wallet methods only.")
    details = serializers.DictField(required=False, help_text="Methods that are not cards.")


class Payment(serializers.Serializer):
    id = serializers.CharField()
    object = ObjectName("payment")
    status = serializers.ChoiceField(choices=Status.choices)
    amount = serializers.IntegerField()
    amount_captured = serializers.IntegerField()
    amount_refunded = serializers.IntegerField()
    currency = serializers.CharField()
    reference = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    capture_method = serializers.ChoiceField(choices=PaymentModel.CaptureMethod.choices)
    method = PaymentMethodDetails()
    customer = serializers.CharField(allow_null=True)
    outcome = serializers.DictField()
    fees = serializers.DictField(allow_null=True)
    return_url = serializers.CharField(allow_null=True)
    statement_descriptor = serializers.CharField(allow_null=True)
    metadata = serializers.DictField()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()
    authorized_at = serializers.DateTimeField(**TIMESTAMP)
    captured_at = serializers.DateTimeField(**TIMESTAMP)
    canceled_at = serializers.DateTimeField(**TIMESTAMP)
    next_action = serializers.DictField(required=False, help_text="Only in requires_action.")


class TokenCard(serializers.Serializer):
    brand = serializers.CharField()
    last4 = serializers.CharField()
    bin = serializers.CharField()
    exp_month = serializers.IntegerField()
    exp_year = serializers.IntegerField()


class Token(serializers.Serializer):
    id = serializers.CharField()
    object = ObjectName("token")
    type = serializers.ChoiceField(choices=TokenModel.Type.choices)
    card = TokenCard()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


LIST_PARAMETERS = [
    *PAGE_PARAMETERS,
    *(OpenApiParameter(name, str, required=False) for name in LIST_FILTERS),
]

# A decline is a committed 402 (payments.views.raise_for_outcome); every POST documents 422.
OUTCOME_ERRORS = error_responses(402)

payment_create = extend_schema(
    request=PaymentCreateInput, responses={201: Payment, **OUTCOME_ERRORS}
)
payment_list = extend_schema(
    parameters=LIST_PARAMETERS, responses={200: list_of(Payment, "PaymentList")}
)
payment_retrieve = extend_schema(responses={200: Payment})
payment_confirm = extend_schema(
    request=PaymentConfirmInput, responses={200: Payment, **OUTCOME_ERRORS}
)
payment_capture = extend_schema(request=CaptureInput, responses={200: Payment})
payment_cancel = extend_schema(request=None, responses={200: Payment})
