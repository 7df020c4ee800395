"""The test-mode operations in the OpenAPI description (docs/openapi.md). The tokenizer's and
the simulator's input serializers live beside their views, which name them."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from api.openapi import PAGE_PARAMETERS, ObjectName, error_responses, exchange, list_of, spec
from payments.openapi import AT, CARD, TOKEN_ID, Payment, Token
from webhooks.openapi_events import EventWithAttempts

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


class ResetDeleted(serializers.Serializer):
    payments = serializers.IntegerField()
    refunds = serializers.IntegerField()
    disputes = serializers.IntegerField()
    tokens = serializers.IntegerField()
    events = serializers.IntegerField()
    deliveries = serializers.IntegerField()
    attempts = serializers.IntegerField()
    idempotency_keys = serializers.IntegerField()
    webhook_endpoints = serializers.IntegerField()


class SandboxReset(serializers.Serializer):
    object = ObjectName("sandbox_reset")
    deleted = ResetDeleted()
    in_flight = serializers.IntegerField()
    complete = serializers.BooleanField()


reset = extend_schema(
    **spec(
        "Reset the test data",
        "",
        "Deletes this merchant's test-mode payments, refunds, disputes, tokens, events, "
        "webhook deliveries and attempts and stored idempotent answers (and its test webhook "
        "endpoints with `webhook_endpoints: true`), in short batches that never lock a live "
        "row. Keys, live mode and other merchants are untouched. One call runs for at most "
        "20 seconds: `complete: false` says rows are left (or `in_flight`: held by requests "
        "running now); call again, it is idempotent. Test keys only (live keys: 403 "
        "`test_mode_required`).",
    ),
    responses={200: SandboxReset},
)


class FailureProfile(serializers.Serializer):
    object = ObjectName("failure_profile")
    error_share = serializers.FloatField(
        help_text="Share of test authorizations answered 502 `connector_http_error`."
    )
    rate_limit_share = serializers.FloatField(
        help_text="Share answered 429 `rate_limit_exceeded` with `Retry-After`."
    )
    latency_share = serializers.FloatField(help_text="Share answered after `latency_ms`.")
    latency_ms = serializers.IntegerField()
    duplicate_share = serializers.FloatField(
        help_text="Share of test webhook deliveries sent twice (same event id, a second attempt)."
    )
    delay_share = serializers.FloatField(
        help_text="Share of test webhook deliveries first sent `delay_seconds` late, which also "
        "lets a resource's later events arrive before them."
    )
    delay_seconds = serializers.IntegerField(help_text="0-300.")
    seed = serializers.IntegerField(help_text="Where the profile's sequence starts.")
    draws = serializers.IntegerField(help_text="Authorizations drawn since it was set.")
    webhook_draws = serializers.IntegerField(help_text="Test deliveries drawn since it was set.")
    livemode = serializers.BooleanField()


PROFILE = (
    "A share of this merchant's test authorizations (creates and confirms) is answered as the "
    "processor failing: 502 `connector_http_error` (nothing processed; retry with the same "
    "Idempotency-Key), 429 `rate_limit_exceeded` with `Retry-After`, or after `latency_ms` "
    "(at most a few such waits at once per account: one more is 429). The shares are met "
    "exactly over any run (a low-discrepancy sequence, not coin flips); a payment with a "
    "`_svc_test_*` metadata override is not drawn. Injected errors say so in their message. "
    "On the webhook side, a share of test deliveries is sent twice or first sent "
    "`delay_seconds` late (reordering a resource's events at an endpoint without ordered "
    "delivery). "
    "Test keys only (live keys: 403 `test_mode_required`)."
)
failure_profile_get = extend_schema(
    **spec("Read the test-mode failure profile", "", PROFILE),
    responses={200: FailureProfile},
)
failure_profile_set = extend_schema(
    **spec("Set the test-mode failure profile", "", PROFILE + " Setting it restarts its sequence."),
    responses={200: FailureProfile},
)
