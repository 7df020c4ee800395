"""The webhook-endpoint and event operations in the OpenAPI description (docs/openapi.md)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers

from api.openapi import PAGE_PARAMETERS, ObjectName, list_of
from events.catalogue import EVENT_TYPES
from webhooks.models import Attempt
from webhooks.serializers import MAX_PATTERNS, EndpointInput, ResendInput

ENDPOINT_STATUSES = ["enabled", "disabled"]
EVENT_TYPE_CHOICES = sorted(EVENT_TYPES)


class WebhookEndpointInput(EndpointInput):
    """EndpointInput as documented: it takes any JSON for `url` and the patterns so that the
    URL guard and the pattern check name the error; the description says what passes them."""

    url = serializers.URLField(max_length=2048, help_text="An absolute https URL.")
    enabled_events = serializers.ListField(
        child=serializers.CharField(),
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
endpoint_create = extend_schema(
    request=WebhookEndpointInput, responses={201: WebhookEndpointWithSecret}
)
endpoint_retrieve = extend_schema(responses={200: WebhookEndpoint})
endpoint_delete = extend_schema(responses={200: DeletedWebhookEndpoint})
endpoint_roll_secret = extend_schema(request=None, responses={200: WebhookEndpointWithSecret})
event_list = extend_schema(
    parameters=[
        *PAGE_PARAMETERS,
        OpenApiParameter("type", str, required=False, description="An event type."),
        OpenApiParameter("resource", str, required=False, description="A resource id."),
    ],
    responses={200: list_of(Event, "EventList")},
)
event_retrieve = extend_schema(responses={200: EventWithAttempts})
event_resend = extend_schema(request=ResendInput, responses={202: EventWithAttempts})
