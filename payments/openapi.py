"""The payments operations in the OpenAPI description (docs/openapi.md): request bodies are the
input serializers themselves; responses declare what payment_to_dict / token_to_dict return
(tests/test_openapi.py compares the two)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers

from api.fields import MAX_AMOUNT, MAX_ID_LENGTH, MAX_STRING_LENGTH, MetadataField
from api.openapi import (
    PAGE_PARAMETERS,
    QUERY_STRING,
    ObjectName,
    error_responses,
    exchange,
    list_of,
    named,
    previous_attributes_of,
    spec,
)
from payments.methods import METHODS
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
# The values the spec lists (spec "Payment object"); every enum is open (docs/openapi.md).
THREE_DS_STATUSES = ["authenticated", "frictionless", "challenge_required", "failed", "timed_out"]
AVS_RESULTS = ["Y", "M", "N", "U", "S", "Z", "A"]
CVV_RESULTS = ["M", "N", "P", "U", "S"]
RISK_DECISIONS = ["accept", "review", "reject"]
NEXT_ACTION_TYPES = ["redirect"]
METHOD_TYPES = sorted(METHODS)


class PaymentCard(serializers.Serializer):
    """`method.card` (spec "Payment object"): never a full number."""

    brand = serializers.CharField()
    last4 = serializers.CharField(min_length=4, max_length=4)
    bin = serializers.CharField(min_length=6, max_length=8)
    exp_month = serializers.IntegerField(min_value=1, max_value=12)
    exp_year = serializers.IntegerField()
    issuer_country = serializers.CharField(min_length=2, max_length=2)
    funding = serializers.CharField()
    fingerprint = serializers.CharField()
    network_token = serializers.BooleanField()


class PaymentMethodDetails(serializers.Serializer):
    type = serializers.ChoiceField(choices=METHOD_TYPES, help_text="The method's wire name.")
    card = PaymentCard(allow_null=True, help_text="Card-like methods; null otherwise.")
    wallet = serializers.CharField(required=False, help_text="Wallet methods only.")
    details = serializers.DictField(
        required=False, help_text="Methods that are not cards; method-specific (not specified)."
    )


class ThreeDS(serializers.Serializer):
    status = serializers.ChoiceField(choices=THREE_DS_STATUSES)
    eci = serializers.CharField(allow_null=True, max_length=2)
    version = serializers.CharField()


class Outcome(serializers.Serializer):
    """What the processor answered (spec "Payment object", `outcome.*`)."""

    response_code = serializers.CharField(allow_null=True, help_text="`00` is approved.")
    decline_code = serializers.CharField(allow_null=True, help_text='Spec "Decline codes".')
    decline_is_soft = serializers.BooleanField(
        allow_null=True, help_text="Whether a retry is safe: the only field to base a retry on."
    )
    avs_result = serializers.ChoiceField(choices=AVS_RESULTS, allow_null=True)
    cvv_result = serializers.ChoiceField(choices=CVV_RESULTS, allow_null=True)
    three_ds = ThreeDS(allow_null=True)
    sca_exemption = serializers.CharField(allow_null=True)
    risk_score = serializers.IntegerField(allow_null=True, min_value=0, max_value=100)
    risk_decision = serializers.ChoiceField(choices=RISK_DECISIONS, allow_null=True)


class PaymentFeeBreakdown(serializers.Serializer):
    mdr = serializers.IntegerField()
    fixed = serializers.IntegerField()
    scheme = serializers.IntegerField()


class PaymentFees(serializers.Serializer):
    """Snapshotted at capture; `amount` is the sum of the breakdown."""

    amount = serializers.IntegerField()
    currency = serializers.CharField()
    breakdown = PaymentFeeBreakdown()


class Redirect(serializers.Serializer):
    url = serializers.CharField(help_text="Where to send the payer.")
    return_url = serializers.CharField(allow_null=True)


class NextAction(serializers.Serializer):
    type = serializers.ChoiceField(choices=NEXT_ACTION_TYPES)
    redirect = Redirect()


@named
class Payment(serializers.Serializer):
    id = serializers.CharField(max_length=MAX_ID_LENGTH)
    object = ObjectName("payment")
    status = serializers.ChoiceField(choices=Status.choices)
    amount = serializers.IntegerField()
    amount_captured = serializers.IntegerField()
    amount_refunded = serializers.IntegerField()
    currency = serializers.CharField()
    reference = serializers.CharField(min_length=1, max_length=64)
    description = serializers.CharField(allow_null=True, max_length=500)
    capture_method = serializers.ChoiceField(choices=PaymentModel.CaptureMethod.choices)
    method = PaymentMethodDetails()
    customer = serializers.CharField(allow_null=True, max_length=MAX_ID_LENGTH)
    outcome = Outcome()
    fees = PaymentFees(allow_null=True, help_text="null before capture.")
    return_url = serializers.CharField(allow_null=True)
    statement_descriptor = serializers.CharField(allow_null=True, min_length=2, max_length=22)
    metadata = MetadataField()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()
    authorized_at = serializers.DateTimeField(**TIMESTAMP)
    captured_at = serializers.DateTimeField(**TIMESTAMP)
    canceled_at = serializers.DateTimeField(**TIMESTAMP)
    next_action = NextAction(required=False, help_text="Only in requires_action.")
    clock_advanced_by = serializers.IntegerField(
        required=False,
        help_text="Test mode: seconds this payment's clock was moved forward by "
        "POST /v1/sandbox/advance-clock/:paymentId; absent when never.",
    )


previous_attributes_of(Payment, "PaymentPreviousAttributes")


class TokenCard(serializers.Serializer):
    brand = serializers.CharField()
    last4 = serializers.CharField(min_length=4, max_length=4)
    # Empty on a live token: the processor does not tell it (docs/processors.md).
    bin = serializers.CharField(max_length=8, allow_blank=True)
    exp_month = serializers.IntegerField(min_value=1, max_value=12)
    exp_year = serializers.IntegerField()


class Token(serializers.Serializer):
    id = serializers.CharField(max_length=MAX_ID_LENGTH)
    object = ObjectName("token")
    type = serializers.ChoiceField(choices=TokenModel.Type.choices)
    card = TokenCard()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


# Each filter of LIST_FILTERS with the type its parser takes (spec "GET /v1/payments").
TIME = {
    "oneOf": [
        {"type": "string", "format": "date-time", "maxLength": MAX_STRING_LENGTH},
        {"type": "integer", "minimum": 0, "description": "Unix seconds."},
    ]
}
AMOUNT = {"type": "integer", "minimum": 0, "maximum": MAX_AMOUNT}
FILTERS = {
    "status": (QUERY_STRING, "One status, or several separated by commas (any of them)."),
    "currency": ({"type": "string", "pattern": "^[A-Za-z]{3}$"}, "ISO 4217 code."),
    "reference": (QUERY_STRING, "The merchant's reference, exactly."),
    "customer": ({"type": "string", "maxLength": MAX_ID_LENGTH}, "A cus_ id."),
    "method_type": (QUERY_STRING, "A method's wire name (PaymentMethodType)."),
    "created[gte]": (TIME, "Created at or after: RFC 3339 or unix seconds."),
    "created[lte]": (TIME, "Created at or before: RFC 3339 or unix seconds."),
    "amount[gte]": (AMOUNT, "Amount at least, minor units."),
    "amount[lte]": (AMOUNT, "Amount at most, minor units."),
}
LIST_PARAMETERS = [
    *PAGE_PARAMETERS,
    *(
        OpenApiParameter(name, schema, description=description, required=False)
        for name, (schema, description) in (
            (name, FILTERS.get(name, (QUERY_STRING, ""))) for name in LIST_FILTERS
        )
    ),
]

P = "Endpoints > Payments > "
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
        "payment": "pay_01M853FRS0X1E9PRK3Y988FRV2",
        "request_id": "req_01M853FRRS4EQCCDDAT9J63QFB",
    }
}

PAYMENT_DECLINED_REQUEST = {
    **PAYMENT_CREATE_REQUEST,
    "reference": "order-1043",
    "payment_method": {"type": "card", "token": DECLINED_TOKEN_ID},
}

payment_create = extend_schema(
    **spec(
        "Create a payment",
        P + "POST /v1/payments",
        "Authorizes the payment method, and captures at once when `capture_method` is "
        "`automatic`. A decline is 402 `card_error` and the payment is kept as `declined`; "
        "`requires_action` carries `next_action`.",
    ),
    request=PaymentCreateInput,
    responses={201: Payment, **OUTCOME_ERRORS},
    examples=[
        *exchange("Approved", PAYMENT_CREATE_REQUEST, PAYMENT_CAPTURED),
        *exchange("Declined", PAYMENT_DECLINED_REQUEST, PAYMENT_DECLINED, status=402),
    ],
)
payment_list = extend_schema(
    **spec(
        "List payments",
        P + "GET /v1/payments",
        'Newest first; the filters combine with AND. Paged by cursor (spec "Pagination").',
    ),
    parameters=LIST_PARAMETERS,
    responses={200: list_of(Payment, "PaymentList")},
)
payment_retrieve = extend_schema(
    **spec("Retrieve a payment", P + "GET /v1/payments/:id"), responses={200: Payment}
)
payment_confirm = extend_schema(
    **spec(
        "Confirm a payment",
        P + "POST /v1/payments/:id/confirm",
        "Attaches a payment method to a `pending` payment and authorizes it.",
    ),
    request=PaymentConfirmInput,
    responses={200: Payment, **OUTCOME_ERRORS},
)
payment_capture = extend_schema(
    **spec(
        "Capture a payment",
        P + "POST /v1/payments/:id/captures",
        "Captures an `authorized` payment, in full or in part (`amount`); once only.",
    ),
    request=CaptureInput,
    responses={200: Payment},
)
payment_cancel = extend_schema(
    **spec(
        "Cancel a payment",
        P + "POST /v1/payments/:id/cancel",
        "Voids the authorization of a payment not yet captured.",
    ),
    request=None,
    responses={200: Payment},
)
