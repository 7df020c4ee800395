"""Input serializers and the output shapes of endpoints, attempts and events with attempts."""

from rest_framework import serializers

from api.errors import quoted
from api.fields import IdField, StrictCharField
from api.renderers import format_timestamp
from events.catalogue import is_valid_pattern
from events.models import Event
from events.serializers import event_to_dict
from webhooks.models import Attempt, WebhookEndpoint

MAX_PATTERNS = 64
MAX_DESCRIPTION = 200
MAX_PATTERN_LENGTH = 100  # the longest event type is 26 characters


class EndpointInput(serializers.Serializer):
    # The URL rules (and their own error codes) are the URL guard's: not repeated here.
    url = serializers.JSONField()
    description = StrictCharField(
        max_length=MAX_DESCRIPTION, required=False, allow_null=True, allow_blank=True
    )
    enabled_events = serializers.ListField(
        child=serializers.JSONField(), required=False, allow_empty=False, max_length=MAX_PATTERNS
    )

    def validate_enabled_events(self, patterns):
        for pattern in patterns:
            if isinstance(pattern, str) and len(pattern) > MAX_PATTERN_LENGTH:
                raise serializers.ValidationError(
                    f"Patterns are at most {MAX_PATTERN_LENGTH} characters: {quoted(pattern)}."
                )
            if not is_valid_pattern(pattern):
                raise serializers.ValidationError(
                    f"{quoted(pattern)} is not an event type, a family pattern such as "
                    "payment.* or *."
                )
        return list(dict.fromkeys(patterns))  # a repeated pattern adds nothing


def endpoint_to_dict(endpoint: WebhookEndpoint, secret: str | None = None) -> dict:
    body = {
        "id": endpoint.id,
        "object": "webhook_endpoint",
        "url": endpoint.url,
        "description": endpoint.description,
        "enabled_events": endpoint.enabled_events,
        "status": endpoint.status,
        "secret_last4": endpoint.secret_last4,
        "previous_secret_expires_at": format_timestamp(endpoint.previous_secret_expires_at),
        "livemode": endpoint.livemode,
        "created": format_timestamp(endpoint.created),
    }
    if secret is not None:
        body["secret"] = secret
    return body


def attempt_to_dict(attempt: Attempt) -> dict:
    return {
        "id": attempt.id,
        "object": "webhook_attempt",
        "event": attempt.event_id,
        "endpoint": attempt.endpoint_id,
        "attempt": attempt.attempt,
        "status": attempt.status,
        "http_status": attempt.http_status,
        "response_body": attempt.response_body,
        "error": attempt.error,
        "duration_ms": attempt.duration_ms,
        "next_retry_at": format_timestamp(attempt.next_retry_at),
        "attempted_at": format_timestamp(attempt.attempted_at),
    }


def event_with_attempts(event: Event) -> dict:
    attempts = event.attempts.order_by("attempted_at", "id")
    return {**event_to_dict(event), "attempts": [attempt_to_dict(a) for a in attempts]}


class ResendInput(serializers.Serializer):
    endpoint = IdField(required=False, allow_null=True)
