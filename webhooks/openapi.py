"""The webhook-endpoint and event operations in the OpenAPI description (docs/openapi.md)."""

from functools import partial

from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
)
from rest_framework import serializers

from api.fields import MAX_ID_LENGTH
from api.openapi import (
    PAGE_PARAMETERS,
    QUERY_STRING,
    ObjectName,
    exchange,
    list_of,
    spec,
)
from webhooks.openapi_events import (
    EventWithAttempts,
    PaymentEvent,
    RefundEvent,
    by_type,
)
from webhooks.serializers import (
    MAX_DESCRIPTION,
    MAX_PATTERN_LENGTH,
    MAX_PATTERNS,
    EndpointInput,
    ResendInput,
)

ENDPOINT_STATUSES = ["enabled", "paused", "disabled"]
W = "Endpoints > Webhook endpoints > "
E = "Endpoints > Events > "


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
    ordered_delivery = serializers.BooleanField(
        required=False,
        help_text="Not in the spec (additive), default false: a resource's event is sent only "
        "once its earlier ones were delivered or dead-lettered here; other resources flow.",
    )


class WebhookEndpointUpdate(WebhookEndpointInput):
    """The fields given change; those left out are kept."""

    url = serializers.URLField(
        max_length=2048, required=False, help_text="An absolute https URL, checked as at creation."
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
            "`disabled`: disabled after sustained failure or a 410 Gone answer (not in the "
            "spec, additive); it gets no events until POST /v1/webhook-endpoints/:id/enable. "
            "`paused` (additive): its events wait until POST /v1/webhook-endpoints/:id/resume. "
            "Deleted endpoints stay hidden."
        ),
    )
    paused_at = serializers.DateTimeField(allow_null=True, help_text="Ours (additive).")
    ordered_delivery = serializers.BooleanField(help_text="Ours (additive).")
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
    "paused_at": None,
    "ordered_delivery": False,
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
endpoint_update = extend_schema(
    operation_id="webhook_endpoints_update",
    **spec(
        "Update a webhook endpoint",
        "",
        "Changes the fields given (a new `url` is checked by the URL guard) and keeps the "
        "others; the next events follow the new settings.",
    ),
    request=WebhookEndpointUpdate,
    responses={200: WebhookEndpoint},
)
endpoint_pause = extend_schema(
    **spec(
        "Pause a webhook endpoint",
        "",
        "Status `paused`: its events wait, nothing is sent and no failure is counted until "
        "it is resumed. 422 `endpoint_disabled` for a disabled one.",
    ),
    request=None,
    responses={200: WebhookEndpoint},
)
endpoint_resume = extend_schema(
    **spec(
        "Resume a webhook endpoint",
        "",
        "The events that waited are sent, oldest first; one that fails is retried within "
        "its event's 72-hour retry window.",
    ),
    request=None,
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
        "or held while it was disabled), oldest first, a page of at most 500 candidates per "
        "call (`has_more`). Within an hour of a recover, a delivery attempted since is left "
        "out of its page, so a call may requeue fewer, even none, with more to come. "
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


class FeedEntry(serializers.Serializer):
    object = ObjectName("feed_entry")
    cursor = serializers.CharField(
        help_text="Pass it as `after` to read on from this event: store it once it is processed."
    )
    event = by_type("Event", PaymentEvent, RefundEvent)


event_feed = extend_schema(
    **spec(
        "Follow the event feed",
        "",
        "The events of the key's mode, oldest first, each with the cursor after it. An event "
        "shows once every transaction that began before its own has ended, so none can ever "
        "appear behind a cursor already handed out. A consumer that stores an entry's `cursor` "
        "after processing its event, and reads on with `after`, never misses an event and "
        "never gets one twice, however many writers commit at once. `next_cursor` is the "
        "cursor after the page (the one sent when the page is empty). `wait`: when nothing "
        "is past `after`, wait up to that many seconds for an event (long poll); a web "
        "process keeps a few waits at once; one more is 429 with `Retry-After: 1`. 400 "
        "`cursor_expired` when the event at `after` was deleted by retention (or is another "
        "account's): start again without a cursor.",
    ),
    parameters=[
        OpenApiParameter(
            "after",
            QUERY_STRING,
            required=False,
            description="A cursor; none: from the oldest event kept; `now`: no events, and the "
            "cursor of the feed's end, to follow only what comes next.",
        ),
        OpenApiParameter("limit", int, required=False, description="1 to 100; default 25."),
        OpenApiParameter(
            "wait",
            {"type": "integer", "minimum": 0, "maximum": 30},
            required=False,
            description="Seconds to wait for an event when none is past `after` (default 0; "
            "the maximum is EVENT_FEED_MAX_WAIT, 20 unless configured).",
        ),
    ],
    operation_id="events_feed",
    responses={
        200: list_of(
            FeedEntry,
            "EventFeed",
            next_cursor=serializers.CharField(
                help_text="After the page; the `after` sent when the page is empty."
            ),
        )
    },
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
