"""The event object's shapes in the OpenAPI description (docs/openapi.md): a payment's or a
refund's event, with its delivery attempts; split from webhooks/openapi.py, which documents
the operations."""

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from api.fields import MAX_ID_LENGTH
from api.openapi import Named, ObjectName
from events.catalogue import EVENT_TYPES_BY_FAMILY
from webhooks.models import Attempt, Delivery

PAYMENT_EVENT_TYPES = list(EVENT_TYPES_BY_FAMILY["payment"])
REFUND_EVENT_TYPES = list(EVENT_TYPES_BY_FAMILY["refund"])


class EventFields(serializers.Serializer):
    """The event envelope (spec "Event object"): the body of every webhook too."""

    id = serializers.CharField(max_length=MAX_ID_LENGTH)
    object = ObjectName("event")
    api_version = serializers.CharField()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()
    resource_version = serializers.IntegerField(
        min_value=1,
        help_text="Not in the spec (additive): the change number of `data.object`, 1 for its "
        "first event and one more for each later one. Keep the highest you stored per "
        "resource and drop an event with a lower one: it is an older state.",
    )


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
    injected = serializers.ChoiceField(
        choices=Delivery.Injected.choices,
        allow_null=True,
        help_text="Test mode: the failure profile's fault on this delivery (sent twice, or "
        "first sent late); null for none.",
    )


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
