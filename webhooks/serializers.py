"""Input serializers and the output shapes of endpoints, attempts and events with attempts."""

from django.utils import timezone
from rest_framework import serializers

from api.errors import quoted
from api.fields import IdField, StrictCharField, parse_time_filter
from api.ids import is_id
from api.renderers import format_timestamp
from api.validation import Input
from events.catalogue import is_valid_pattern
from events.models import Event
from events.serializers import event_to_dict
from webhooks.models import Attempt, WebhookEndpoint

MAX_PATTERNS = 64
MAX_DESCRIPTION = 200
MAX_PATTERN_LENGTH = 100  # the longest event type is 26 characters


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false only (DRF's would take "yes", 1 or "on")."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be a boolean.")
        return data


class EndpointInput(Input):
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

    ordered_delivery = StrictBooleanField(required=False)


def patterns_from_text(text: str) -> list[str]:
    """Comma-separated patterns as the back office and manage.py take them; ValueError names
    the first that is not an event type, a family pattern or *."""
    patterns = [pattern.strip() for pattern in text.split(",") if pattern.strip()]
    if bad := [pattern for pattern in patterns if not is_valid_pattern(pattern)]:
        raise ValueError(f"Not an event type or pattern: {bad[0]}")
    return list(dict.fromkeys(patterns))


class EndpointUpdateInput(EndpointInput):
    """POST /v1/webhook-endpoints/:id: the same fields, each optional; those given change."""

    url = serializers.JSONField(required=False)


def endpoint_to_dict(
    endpoint: WebhookEndpoint, secret: str | None = None, health: dict | None = None
) -> dict:
    """`health` (webhooks.health.health_of) is ours, beside the spec's fields: clients ignore
    unknown fields (spec "Conventions")."""
    body = {
        "id": endpoint.id,
        "object": "webhook_endpoint",
        "url": endpoint.url,
        "description": endpoint.description,
        "enabled_events": endpoint.enabled_events,
        "status": endpoint.status,
        "paused_at": format_timestamp(endpoint.paused_at),
        "ordered_delivery": endpoint.ordered_delivery,
        "secret_last4": endpoint.secret_last4,
        "previous_secret_expires_at": format_timestamp(endpoint.previous_secret_expires_at),
        "livemode": endpoint.livemode,
        "created": format_timestamp(endpoint.created),
    }
    if health is not None:
        body["health"] = health
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
        "http_status": attempt.http_status or 0,  # null: stored before 0 meant "no response"
        "response_body": attempt.response_body,
        "error": attempt.error,
        "duration_ms": attempt.duration_ms,
        "next_retry_at": format_timestamp(attempt.next_retry_at),
        "attempted_at": format_timestamp(attempt.attempted_at),
        # A test-mode failure profile's fault on its delivery (webhooks.faults), null for none.
        "injected": attempt.delivery.injected or None,
    }


def event_with_attempts(event: Event) -> dict:
    attempts = event.attempts.select_related("delivery").order_by("attempted_at", "id")
    return {**event_to_dict(event), "attempts": [attempt_to_dict(a) for a in attempts]}


class ResendInput(Input):
    endpoint = IdField(required=False, allow_null=True)


class TimeField(serializers.Field):
    """RFC 3339 with a zone, or unix seconds (as the list filters take them)."""

    default_error_messages = {
        "invalid": "Must be an RFC 3339 time with a zone, or unix seconds.",
        "future": "Must not be in the future.",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, str | int):
            self.fail("invalid")
        parsed = parse_time_filter(str(data))
        if parsed is None:
            self.fail("invalid")
        if parsed > timezone.now():
            self.fail("future")
        return parsed


class RecoverInput(Input):
    since = TimeField()
    starting_after = IdField(required=False, allow_null=True)

    def validate_starting_after(self, value):
        if value and not is_id(value, "evt"):
            raise serializers.ValidationError("Must be an event id (evt_...).")
        return value


def recovery_to_dict(recovery) -> dict:
    return {
        "object": "webhook_recovery",
        "endpoint": recovery.endpoint.id,
        "since": format_timestamp(recovery.since),
        "requeued": len(recovery.event_ids),
        "events": recovery.event_ids,
        "has_more": recovery.has_more,
        "next_starting_after": recovery.next_starting_after,
    }
