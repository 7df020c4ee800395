"""The payments operations in the OpenAPI description (docs/openapi.md): request bodies are the
input serializers themselves; responses declare what payment_to_dict / token_to_dict return
(tests/test_openapi.py compares the two)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers

from api.openapi import (
    PAGE_PARAMETERS,
    QUERY_STRING,
    ObjectName,
    error_responses,
    exchange,
    list_of,
)
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
    clock_advanced_by = serializers.IntegerField(
        required=False,
        help_text="Test mode: seconds this payment's clock was moved forward by "
        "POST /v1/sandbox/advance-clock/:paymentId; absent when never.",
    )


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
    *(OpenApiParameter(name, QUERY_STRING, required=False) for name in LIST_FILTERS),
]

# A decline is a committed 402 (payments.views.raise_for_outcome); every POST documents 422.
OUTCOME_ERRORS = error_responses(402)

# Examples are a real exchange in test mode (tests/api/test_openapi_examples.py sends each
# request and compares the answer's shape with the example's).
TOKEN_ID = "tok_01M85371JREWBMVK8WCZ97QS5X"
DECLINED_TOKEN_ID = "tok_01M853FRRP4ETV9N483SYA2495"
# The test card each example token was made from (decisions.md, the nine test cards).
EXAMPLE_TOKEN_CARDS = {TOKEN_ID: "4242424242424242", DECLINED_TOKEN_ID: "4000000000000002"}
PAYMENT_ID = "pay_01M85371JZBEXMC81B4NY5W0EJ"
AT = "2026-11-23T20:57:58Z"
CARD = {"brand": "visa", "last4": "4242", "bin": "424242", "exp_month": 12, "exp_year": 2030}
PAYMENT_CREATE_REQUEST = {
    "amount": 2500,
    "currency": "eur",
    "reference": "order-1042",
    "description": "2 tickets",
    "payment_method": {"type": "card", "token": TOKEN_ID},
    "metadata": {"order_id": "1042"},
}
PAYMENT_CAPTURED = {
    "id": PAYMENT_ID,
    "object": "payment",
    "status": "captured",
    "amount": 2500,
    "amount_captured": 2500,
    "amount_refunded": 0,
    "currency": "eur",
    "reference": "order-1042",
    "description": "2 tickets",
    "capture_method": "automatic",
    "method": {
        "type": "card",
        "card": {
            **CARD,
            "issuer_country": "EE",
            "funding": "credit",
            "fingerprint": "09bfb73ddf531dc2d0c2dd824e99deb9",
            "network_token": False,
        },
    },
    "customer": None,
    "outcome": {
        "response_code": "00",
        "decline_code": None,
        "decline_is_soft": None,
        "avs_result": "Y",
        "cvv_result": "M",
        "three_ds": None,
        "sca_exemption": "transaction_risk_analysis",
        "risk_score": 8,
        "risk_decision": "accept",
    },
    "fees": {"amount": 60, "currency": "eur", "breakdown": {"mdr": 35, "fixed": 25, "scheme": 0}},
    "return_url": None,
    "statement_descriptor": None,
    "metadata": {"order_id": "1042"},
    "livemode": False,
    "created": AT,
    "authorized_at": AT,
    "captured_at": AT,
    "canceled_at": None,
}

PAYMENT_DECLINED = {
    "error": {
        "type": "card_error",
        "code": "card_declined",
        "message": "The card was declined (generic_decline, hard: do not retry). Payment "
        "pay_01M853FRS0X1E9PRK3Y988FRV2 is declined.",
        "param": None,
        "decline_code": "generic_decline",
        "request_id": "req_01M853FRRS4EQCCDDAT9J63QFB",
    }
}

PAYMENT_DECLINED_REQUEST = {
    **PAYMENT_CREATE_REQUEST,
    "reference": "order-1043",
    "payment_method": {"type": "card", "token": DECLINED_TOKEN_ID},
}

payment_create = extend_schema(
    request=PaymentCreateInput,
    responses={201: Payment, **OUTCOME_ERRORS},
    examples=[
        *exchange("Approved", PAYMENT_CREATE_REQUEST, PAYMENT_CAPTURED),
        *exchange("Declined", PAYMENT_DECLINED_REQUEST, PAYMENT_DECLINED, status=402),
    ],
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
