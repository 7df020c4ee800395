"""The webhook-endpoint and event operations in the OpenAPI description (docs/openapi.md)."""

from functools import partial

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiWebhook,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import serializers

from api.fields import MAX_ID_LENGTH
from api.openapi import (
    PAGE_PARAMETERS,
    QUERY_STRING,
    Named,
    ObjectName,
    exchange,
    list_of,
    spec,
)
from events.catalogue import EVENT_TYPES, EVENT_TYPES_BY_FAMILY
from webhooks.models import Attempt
from webhooks.serializers import (
    MAX_DESCRIPTION,
    MAX_PATTERN_LENGTH,
    MAX_PATTERNS,
    EndpointInput,
    ResendInput,
)

ENDPOINT_STATUSES = ["enabled", "disabled"]
W = "Endpoints > Webhook endpoints > "
E = "Endpoints > Events > "
EVENT_TYPE_CHOICES = sorted(EVENT_TYPES)


class WebhookEndpointInput(EndpointInput):
    """EndpointInput as documented: it takes any JSON for `url` and the patterns so that the
    URL guard and the pattern check name the error; the description says what passes them."""

    url = serializers.URLField(max_length=2048, help_text="An absolute https URL.")
    enabled_events = serializers.ListField(
        child=serializers.CharField(max_length=MAX_PATTERN_LENGTH),
        required=False,
        allow_empty=False,
        max_length=MAX_PATTERNS,
        help_text="Event types, family patterns such as `payment.*`, or `*`; default `*`.",
    )


class HealthWindow(serializers.Serializer):
    attempts = serializers.IntegerField(min_value=0)
    delivered = serializers.IntegerField(min_value=0)
    success_rate = serializers.FloatField(
        allow_null=True, min_value=0, max_value=1, help_text="delivered / attempts; null: none"
    )


class WebhookEndpointHealth(serializers.Serializer):
    """Not in the spec (additive): recent delivery health, counted as each attempt is recorded."""

    last_hour = HealthWindow(help_text="Attempts in the last hour (5-minute granularity).")
    last_day = HealthWindow(help_text="Attempts in the last 24 hours (5-minute granularity).")
    consecutive_failures = serializers.IntegerField(min_value=0)
    failing_since = serializers.DateTimeField(
        allow_null=True, help_text="The first failure since the last delivered attempt."
    )
    last_success_at = serializers.DateTimeField(allow_null=True)
    last_failure_at = serializers.DateTimeField(allow_null=True)
    last_failure_http_status = serializers.IntegerField(
        allow_null=True, help_text="0 when no response was received"
    )
    last_failure_error = serializers.CharField(allow_null=True, max_length=500)
    warned_at = serializers.DateTimeField(
        allow_null=True, help_text="When the owner was warned of this run of failures."
    )
    disabled_at = serializers.DateTimeField(
        allow_null=True, help_text="When it was disabled after sustained failure."
    )


class WebhookEndpoint(serializers.Serializer):
    id = serializers.CharField(max_length=MAX_ID_LENGTH)
    object = ObjectName("webhook_endpoint")
    url = serializers.CharField(max_length=2048)
    description = serializers.CharField(allow_null=True, max_length=MAX_DESCRIPTION)
    enabled_events = serializers.ListField(
        child=serializers.CharField(max_length=MAX_PATTERN_LENGTH), max_length=MAX_PATTERNS
    )
    status = serializers.ChoiceField(
        choices=ENDPOINT_STATUSES,
        help_text=(
            "`disabled`: disabled after sustained failure (not in the spec, additive); it gets "
            "no events until POST /v1/webhook-endpoints/:id/enable. Deleted endpoints stay "
            "hidden."
        ),
    )
    secret_last4 = serializers.CharField(min_length=4, max_length=4)
    previous_secret_expires_at = serializers.DateTimeField(allow_null=True)
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()
    health = WebhookEndpointHealth()


class WebhookEndpointWithSecret(WebhookEndpoint):
    secret = serializers.CharField(help_text="Shown on create and roll-secret only.")


class DeletedWebhookEndpoint(serializers.Serializer):
    id = serializers.CharField()
    object = ObjectName("webhook_endpoint")
    deleted = serializers.BooleanField()


PAYMENT_EVENT_TYPES = list(EVENT_TYPES_BY_FAMILY["payment"])
REFUND_EVENT_TYPES = list(EVENT_TYPES_BY_FAMILY["refund"])


class EventFields(serializers.Serializer):
    """The event envelope (spec "Event object"): the body of every webhook too."""

    id = serializers.CharField(max_length=MAX_ID_LENGTH)
    object = ObjectName("event")
    api_version = serializers.CharField()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()


class PaymentEventData(serializers.Serializer):
    object = Named("Payment", help_text="The payment as it was when the event happened.")
    previous_attributes = Named(
        "PaymentPreviousAttributes", help_text="The fields that changed, with their old value."
    )


class RefundEventData(serializers.Serializer):
    object = Named("Refund", help_text="The refund as it was when the event happened.")
    previous_attributes = Named(
        "RefundPreviousAttributes", help_text="The fields that changed, with their old value."
    )


class PaymentEvent(EventFields):
    type = serializers.ChoiceField(choices=PAYMENT_EVENT_TYPES)
    data = PaymentEventData()


class RefundEvent(EventFields):
    type = serializers.ChoiceField(choices=REFUND_EVENT_TYPES)
    data = RefundEventData()


class WebhookAttempt(serializers.Serializer):
    id = serializers.CharField()
    object = ObjectName("webhook_attempt")
    event = serializers.CharField()
    endpoint = serializers.CharField()
    attempt = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Attempt.Status.choices)
    http_status = serializers.IntegerField(help_text="0 when no response was received")
    response_body = serializers.CharField()
    error = serializers.CharField(allow_null=True)
    duration_ms = serializers.IntegerField()
    next_retry_at = serializers.DateTimeField(allow_null=True)
    attempted_at = serializers.DateTimeField()


class PaymentEventWithAttempts(PaymentEvent):
    attempts = WebhookAttempt(many=True)


class RefundEventWithAttempts(RefundEvent):
    attempts = WebhookAttempt(many=True)


def by_type(name: str, payment_event, refund_event, **kwargs) -> PolymorphicProxySerializer:
    """An event, a oneOf discriminated by `type`: its family says what `data.object` is (the
    reserved families emit no events yet)."""
    return PolymorphicProxySerializer(
        component_name=name,
        serializers={
            **dict.fromkeys(PAYMENT_EVENT_TYPES, payment_event),
            **dict.fromkeys(REFUND_EVENT_TYPES, refund_event),
        },
        resource_type_field_name="type",
        **kwargs,
    )


Event = by_type("Event", PaymentEvent, RefundEvent)
EventWithAttempts = by_type("EventWithAttempts", PaymentEventWithAttempts, RefundEventWithAttempts)


endpoint_list = extend_schema(
    **spec(
        "List webhook endpoints", W + "GET /v1/webhook-endpoints and GET /v1/webhook-endpoints/:id"
    ),
    parameters=PAGE_PARAMETERS,
    responses={200: list_of(WebhookEndpoint, "WebhookEndpointList")},
)
# A real exchange in test mode, as the payment examples are (tests/api/test_openapi_examples.py).
ENDPOINT_CREATE_REQUEST = {
    "url": "https://shop.example.com/webhooks",
    "description": "Order service",
    "enabled_events": ["payment.*", "refund.succeeded"],
}
ENDPOINT_CREATED = {
    "id": "whe_01M854ZGE7J7R641XQMFNKTEPW",
    "object": "webhook_endpoint",
    **ENDPOINT_CREATE_REQUEST,
    "status": "enabled",
    "secret_last4": "l9wH",
    "previous_secret_expires_at": None,
    "livemode": False,
    "created": "2026-11-23T21:28:48Z",
    "health": {
        "last_hour": {"attempts": 0, "delivered": 0, "success_rate": None},
        "last_day": {"attempts": 0, "delivered": 0, "success_rate": None},
        "consecutive_failures": 0,
        "failing_since": None,
        "last_success_at": None,
        "last_failure_at": None,
        "last_failure_http_status": None,
        "last_failure_error": None,
        "warned_at": None,
        "disabled_at": None,
    },
    "secret": "svc_whsec_0EoHXeCNk2TWzXqGftwfQkrQwW6Vl9wH",
}
endpoint_create = extend_schema(
    **spec(
        "Create a webhook endpoint",
        W + "POST /v1/webhook-endpoints",
        "The answer is the only one that shows the whole `secret` (until a roll-secret).",
    ),
    request=WebhookEndpointInput,
    responses={201: WebhookEndpointWithSecret},
    examples=exchange("An order service", ENDPOINT_CREATE_REQUEST, ENDPOINT_CREATED),
)
endpoint_retrieve = extend_schema(
    **spec(
        "Retrieve a webhook endpoint",
        W + "GET /v1/webhook-endpoints and GET /v1/webhook-endpoints/:id",
    ),
    responses={200: WebhookEndpoint},
)
endpoint_delete = extend_schema(
    **spec(
        "Delete a webhook endpoint",
        W + "DELETE /v1/webhook-endpoints/:id",
        "It is disabled and hidden from the list; nothing more is delivered to it.",
    ),
    responses={200: DeletedWebhookEndpoint},
)
endpoint_roll_secret = extend_schema(
    **spec(
        "Roll a webhook endpoint's secret",
        W + "POST /v1/webhook-endpoints/:id/roll-secret",
        "A new secret, shown once; the old one still signs for 24 hours "
        "(`previous_secret_expires_at`).",
    ),
    request=None,
    responses={200: WebhookEndpointWithSecret},
)
endpoint_enable = extend_schema(
    **spec(
        "Re-enable a webhook endpoint",
        "",
        "For an endpoint disabled after sustained failure: it gets events again, its health "
        "counters start afresh, and the retries held while it was disabled are made now. "
        "An enabled endpoint is returned unchanged. 422 `endpoint_limit_reached` when 16 "
        "others are enabled.",
    ),
    request=None,
    responses={200: WebhookEndpoint},
)


class WebhookRecovery(serializers.Serializer):
    object = ObjectName("webhook_recovery")
    endpoint = serializers.CharField(max_length=MAX_ID_LENGTH)
    since = serializers.DateTimeField()
    requeued = serializers.IntegerField(min_value=0, help_text="How many events were requeued.")
    events = serializers.ListField(child=serializers.CharField(max_length=MAX_ID_LENGTH))
    has_more = serializers.BooleanField(
        help_text="More to recover: call again with `starting_after` = `next_starting_after`."
    )
    next_starting_after = serializers.CharField(allow_null=True, max_length=MAX_ID_LENGTH)


class RecoverRequest(serializers.Serializer):
    since = serializers.CharField(
        max_length=64,
        help_text="Events created at or after this time: RFC 3339 with a zone, or unix seconds; "
        "not in the future.",
    )
    starting_after = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=MAX_ID_LENGTH,
        help_text="An event id: continue after it (the last call's `next_starting_after`).",
    )


endpoint_recover = extend_schema(
    **spec(
        "Recover a webhook endpoint's failed events",
        "",
        "One more attempt now, numbering continued as a resend does, for every event since "
        "`since` whose delivery to this endpoint failed (waiting for a retry, dead-lettered "
        "or held while it was disabled), oldest first, at most 500 per call (`has_more`). "
        "202: the workers make the attempts; they appear on GET /v1/events/:id. 422 "
        "`endpoint_disabled` while the endpoint is disabled.",
    ),
    request=RecoverRequest,
    responses={202: WebhookRecovery},
)
event_list = extend_schema(
    **spec("List events", E + "GET /v1/events", "Newest first, paged by cursor."),
    parameters=[
        *PAGE_PARAMETERS,
        OpenApiParameter("type", QUERY_STRING, required=False, description="An event type."),
        OpenApiParameter("resource", QUERY_STRING, required=False, description="A resource id."),
    ],
    responses={200: list_of(partial(by_type, "Event", PaymentEvent, RefundEvent), "EventList")},
)
event_retrieve = extend_schema(
    **spec(
        "Retrieve an event",
        E + "GET /v1/events/:id",
        "With the attempts to deliver it to each endpoint.",
    ),
    responses={200: EventWithAttempts},
)
event_resend = extend_schema(
    **spec(
        "Resend an event",
        E + "POST /v1/events/:id/resend",
        "202: the attempts are made by the workers; they appear on GET /v1/events/:id.",
    ),
    request=ResendInput,
    responses={202: EventWithAttempts},
)


def delivery_header(name: str, schema: dict, description: str = "") -> dict:
    return {
        "in": "header",
        "name": name,
        "required": True,
        "schema": schema,
        "description": description,
    }


# Every `v1=` is a hex HMAC-SHA256 (webhooks/signing.py); one per active secret.
SIGNATURE_PATTERN = r"^t=[0-9]+(,v1=[0-9a-f]{64})+$"

# The delivery as its receiver sees it (OpenAPI 3.1 `webhooks`; SPECTACULAR_SETTINGS["WEBHOOKS"]),
# with the headers webhooks.attempts.delivery_headers sends. A raw operation: drf-spectacular
# would give a webhook neither header parameters nor anything but our API's error answers.
EVENT_WEBHOOK = OpenApiWebhook(
    name="event",
    decorator={
        "post": {
            "operationId": "event_delivered",
            # No API key: the receiver checks Service-Signature (spec "Signature").
            "security": [],
            "summary": "An event, delivered to a webhook endpoint",
            "description": (
                "POSTed to every enabled endpoint subscribed to the event's type. "
                "`Service-Signature` is `t=<unix seconds>,v1=<hex HMAC-SHA256 of "
                '"<t>.<raw body>" under the endpoint secret>`; for 24 hours after a roll-secret '
                "it holds one `v1=` per active secret. Any 2xx ends the retries."
            ),
            "parameters": [
                delivery_header(
                    "Service-Signature", {"type": "string", "pattern": SIGNATURE_PATTERN}
                ),
                delivery_header("Service-Event-Id", {"type": "string"}),
                delivery_header("Service-Event-Type", {"$ref": "#/components/schemas/EventType"}),
                delivery_header(
                    "Idempotency-Key", {"type": "string"}, "The event id: deduplicate on it."
                ),
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Event"}}},
            },
            "responses": {"2XX": {"description": "Received: no more attempts."}},
        }
    },
)
