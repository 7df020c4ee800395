"""The test-mode operations in the OpenAPI description (docs/openapi.md). The tokenizer's and
the simulator's input serializers live beside their views, which name them."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from api.openapi import PAGE_PARAMETERS, error_responses, exchange, list_of, spec
from payments.openapi import AT, CARD, TOKEN_ID, Payment, Token
from webhooks.openapi import EventWithAttempts

T = "Endpoints > Test-mode endpoints > "
TOKEN_CREATED = {201: Token}
TOKEN_CREATE_REQUEST = {
    "number": "4242424242424242",
    "exp_month": 12,
    "exp_year": 2030,
    "cvc": "123",
}
TOKEN = {
    "id": TOKEN_ID,
    "object": "token",
    "type": "card",
    "card": CARD,
    "livemode": False,
    "created": AT,
    "expires_at": "2026-11-23T21:12:58Z",
}
TOKEN_EXAMPLES = exchange("A test card", TOKEN_CREATE_REQUEST, TOKEN)
token_create = extend_schema(
    **spec(
        "Tokenize a test card",
        T + "POST /v1/sandbox/tokens",
        "A single-use token for 15 minutes; callable with the publishable key (a browser).",
    )
)
# 404: the `resource` named does not exist.
WEBHOOK_SIMULATED = {201: EventWithAttempts, **error_responses(404)}
simulate_webhook = extend_schema(
    **spec(
        "Send a simulated webhook",
        T + "POST /v1/sandbox/simulate-webhook",
        "Emits a test event of the given type and delivers it to the subscribed endpoints.",
    )
)


class TestCard(serializers.Serializer):
    number = serializers.CharField()
    brand = serializers.CharField()
    outcome = serializers.CharField()
    label = serializers.CharField()
    decline_code = serializers.CharField(required=False)
    decline_is_soft = serializers.BooleanField(required=False)


test_card_list = extend_schema(
    **spec(
        "List the test cards",
        T + "GET /v1/sandbox/test-cards",
        "The test cards, their outcomes, and the metadata keys that override a payment's "
        "outcome (`metadata_overrides`: `_svc_test_http_error` makes a payment answer a 5xx).",
    ),
    parameters=PAGE_PARAMETERS,
    responses={
        200: list_of(
            TestCard,
            "TestCardList",
            metadata_overrides=serializers.DictField(child=serializers.CharField()),
        )
    },
)
advance = extend_schema(
    **spec(
        "Advance a test payment",
        T + "POST /v1/sandbox/advance/:paymentId",
        "Resolves a `processing` payment now instead of after its 30 seconds; any other status "
        "is 422 `payment_not_advanceable`.",
    ),
    request=None,
    responses={200: Payment},
)
advance_clock = extend_schema(
    **spec(
        "Move a test payment's clock forward",
        "",
        "Sandbox time travel (not in the spec; additive). Every timed transition of this "
        "payment due within `seconds` happens now, in order, with the same events and "
        "webhooks as when the time comes: pending and requires_action expire after an hour, "
        "authorized after 7 days, processing resolves after 30 seconds. What is left brings "
        "the next deadline closer. The payment then carries `clock_advanced_by`, the seconds "
        "its clock has moved in all. Test keys only (live keys: 403 `test_mode_required`).",
    ),
    responses={200: Payment},
)
retry_now = extend_schema(
    **spec(
        "Make a test event's webhook retries due now",
        "",
        "Sandbox time travel for webhooks (not in the spec; additive). Every delivery of this "
        "test event waiting for its next retry is attempted now instead of when the schedule "
        "says (10 s, 1 min, 5 min, 30 min, 2 h, 6 h, 24 h); a failed attempt schedules the "
        "next as usual, so calling it after each attempt walks the schedule to the dead "
        "letter in minutes. Answers 202 with the event and its attempts so far. Test keys "
        "only (live keys: 403 `test_mode_required`).",
    ),
    request=None,
    responses={202: EventWithAttempts},
)
