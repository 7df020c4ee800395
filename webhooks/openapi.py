"""The webhook-endpoint and event operations in the OpenAPI description (docs/openapi.md)."""

from drf_spectacular.utils import OpenApiParameter, OpenApiWebhook, extend_schema
from rest_framework import serializers

from api.openapi import PAGE_PARAMETERS, QUERY_STRING, ObjectName, exchange, list_of
from events.catalogue import EVENT_TYPES
from webhooks.models import Attempt
from webhooks.serializers import MAX_PATTERN_LENGTH, MAX_PATTERNS, EndpointInput, ResendInput

ENDPOINT_STATUSES = ["enabled", "disabled"]
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


class WebhookEndpoint(serializers.Serializer):
    id = serializers.CharField()
    object = ObjectName("webhook_endpoint")
    url = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    enabled_events = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=ENDPOINT_STATUSES)
    secret_last4 = serializers.CharField()
    previous_secret_expires_at = serializers.DateTimeField(allow_null=True)
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()


class WebhookEndpointWithSecret(WebhookEndpoint):
    secret = serializers.CharField(help_text="Shown on create and roll-secret only.")


class DeletedWebhookEndpoint(serializers.Serializer):
    id = serializers.CharField()
    object = ObjectName("webhook_endpoint")
    deleted = serializers.BooleanField()


class EventData(serializers.Serializer):
    object = serializers.DictField(help_text="The resource as it was when the event happened.")
    previous_attributes = serializers.DictField()


class Event(serializers.Serializer):
    """The event envelope (spec "Event object"): the body of every webhook too."""

    id = serializers.CharField()
    object = ObjectName("event")
    type = serializers.ChoiceField(choices=EVENT_TYPE_CHOICES)
    api_version = serializers.CharField()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()
    data = EventData()


class WebhookAttempt(serializers.Serializer):
    id = serializers.CharField()
    object = ObjectName("webhook_attempt")
    event = serializers.CharField()
    endpoint = serializers.CharField()
    attempt = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Attempt.Status.choices)
    http_status = serializers.IntegerField(allow_null=True)
    response_body = serializers.CharField()
    error = serializers.CharField(allow_null=True)
    duration_ms = serializers.IntegerField()
    next_retry_at = serializers.DateTimeField(allow_null=True)
    attempted_at = serializers.DateTimeField()


class EventWithAttempts(Event):
    attempts = WebhookAttempt(many=True)


endpoint_list = extend_schema(
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
    "secret": "svc_whsec_0EoHXeCNk2TWzXqGftwfQkrQwW6Vl9wH",
}
endpoint_create = extend_schema(
    request=WebhookEndpointInput,
    responses={201: WebhookEndpointWithSecret},
    examples=exchange("An order service", ENDPOINT_CREATE_REQUEST, ENDPOINT_CREATED),
)
endpoint_retrieve = extend_schema(responses={200: WebhookEndpoint})
endpoint_delete = extend_schema(responses={200: DeletedWebhookEndpoint})
endpoint_roll_secret = extend_schema(request=None, responses={200: WebhookEndpointWithSecret})
event_list = extend_schema(
    parameters=[
        *PAGE_PARAMETERS,
        OpenApiParameter("type", QUERY_STRING, required=False, description="An event type."),
        OpenApiParameter("resource", QUERY_STRING, required=False, description="A resource id."),
    ],
    responses={200: list_of(Event, "EventList")},
)
event_retrieve = extend_schema(responses={200: EventWithAttempts})
event_resend = extend_schema(request=ResendInput, responses={202: EventWithAttempts})


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
