"""`GET /v1/request-logs`: a merchant's own API requests, newest first (docs/request-log.md).

Not in the spec (additive): what reached the service from the merchant's keys in the mode of
the key asking, filterable by status, path, time, Idempotency-Key and request id. Each entry
carries no body: the path and the Idempotency-Key are kept redacted, as the logs have them.
"""

import datetime

from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from api.errors import ValidationFailed
from api.fields import parse_time_filter
from api.ids import created_window
from api.logfilters import redact_log_text
from api.models import RequestLogEntry
from api.openapi import ERROR_TYPES, PAGE_PARAMETERS, QUERY_STRING, ObjectName, list_of
from api.renderers import format_timestamp
from api.views import ServiceAPIView


class RequestLogError(serializers.Serializer):
    type = serializers.ChoiceField(choices=ERROR_TYPES)
    code = serializers.CharField()


class RequestLog(serializers.Serializer):
    """The request-log entry object."""

    id = serializers.CharField(help_text="The request's X-Request-Id.")
    object = ObjectName("request_log")
    method = serializers.CharField()
    path = serializers.CharField(help_text="Card- and key-shaped text masked.")
    status = serializers.IntegerField()
    error = RequestLogError(
        allow_null=True, help_text="`type` and `code` of the error answer; null on success."
    )
    idempotency_key = serializers.CharField(allow_null=True)
    idempotent_replayed = serializers.BooleanField()
    replay_of = serializers.CharField(
        allow_null=True,
        help_text="For a replay: the X-Request-Id its answer carried (the original request's); "
        "null otherwise.",
    )
    injected = serializers.CharField(
        allow_null=True,
        help_text="Test mode: what the failure profile injected in this answer (`error`, "
        "`rate_limited`), or null for a real answer.",
    )
    key_id = serializers.CharField(help_text="The API key used (its id, never the key).")
    api_version = serializers.CharField(allow_null=True)
    omitted_after = serializers.IntegerField(
        allow_null=True,
        help_text="On the last refused request made with a publishable key kept in its minute: "
        "how many more such refusals of that minute were left out of the log; null otherwise.",
    )
    duration_ms = serializers.FloatField()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()


def entry_to_dict(entry: RequestLogEntry) -> dict:
    error = {"type": entry.error_type, "code": entry.error_code} if entry.error_type else None
    return {
        "id": entry.id,
        "object": "request_log",
        "method": entry.method,
        "path": entry.path,
        "status": entry.status,
        "error": error,
        "idempotency_key": entry.idempotency_key,
        "idempotent_replayed": entry.replayed,
        "replay_of": entry.replay_of,
        "injected": entry.injected,
        "key_id": entry.key_id,
        "api_version": entry.api_version,
        "omitted_after": entry.omitted_after,
        "duration_ms": entry.duration_ms,
        "livemode": entry.livemode,
        "created": format_timestamp(entry.created),
    }


def _status(value: str) -> dict:
    if value in ("2xx", "3xx", "4xx", "5xx"):
        low = int(value[0]) * 100
        return {"status__gte": low, "status__lt": low + 100}
    if value.isdigit() and 100 <= int(value) <= 599:
        return {"status": int(value)}
    raise ValueError("an HTTP status (e.g. 402) or a class (2xx, 4xx, 5xx)")


def _time(lookup: str):
    def parse(value: str) -> dict:
        when = parse_time_filter(value)
        if when is None:
            raise ValueError("RFC 3339 with a zone, or unix seconds")
        # Stored to the microsecond, shown to the second: lte takes its whole second.
        if lookup == "lte":
            return {"created__lt": when + datetime.timedelta(seconds=1)}
        return {"created__gte": when}

    return parse


def _text(lookup: str, *, redacted: bool = False):
    def parse(value: str) -> dict:
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return {lookup: redact_log_text(value) if redacted else value}

    return parse


FILTERS = {
    "status": _status,
    "path": _text("path", redacted=True),
    "created[gte]": _time("gte"),
    "created[lte]": _time("lte"),
    "idempotency_key": _text("idempotency_key", redacted=True),
    "request_id": _text("id"),
}


def parse_filters(params) -> dict:
    lookups = {}
    for name, parse in FILTERS.items():
        raw = params.get(name)
        if raw is None:
            continue
        try:
            lookups.update(parse(raw))
        except ValueError as exc:
            raise ValidationFailed(f"Invalid {name}: {exc}.", param=name) from exc
    return lookups


class RequestLogList(ServiceAPIView):
    @extend_schema(
        summary="List your API requests",
        description=(
            "Not in the spec (additive). The requests made with this account's keys in the "
            "mode of the key asking, newest first, kept REQUEST_LOG_RETENTION_DAYS (30 by "
            "default). Entries appear within about a second. No bodies: path and "
            "Idempotency-Key are redacted as the logs keep them."
        ),
        parameters=[
            *PAGE_PARAMETERS,
            OpenApiParameter("status", QUERY_STRING, description="402, or a class: 2xx, 4xx, 5xx."),
            OpenApiParameter(
                "path", QUERY_STRING, description="The exact path, e.g. /v1/payments."
            ),
            OpenApiParameter("created[gte]", QUERY_STRING, description="RFC 3339 or unix seconds."),
            OpenApiParameter(
                "created[lte]", QUERY_STRING, description="Its whole second included."
            ),
            OpenApiParameter("idempotency_key", QUERY_STRING),
            OpenApiParameter(
                "request_id",
                QUERY_STRING,
                description="An X-Request-Id: the request's entry and the replays that carried it.",
            ),
        ],
        responses={200: list_of(RequestLog, "RequestLogList")},
    )
    def get(self, request):
        filters = parse_filters(request.query_params)
        window = created_window(
            "req", filters.pop("created__gte", None), filters.pop("created__lt", None)
        )
        held_id = filters.pop("id", None)
        entries = RequestLogEntry.objects.filter(
            window, merchant_id=request.merchant.id, livemode=request.livemode, **filters
        )
        if held_id is not None:  # what a client holds: the original's id, which replays carry
            entries = entries.filter(Q(id=held_id) | Q(replay_of=held_id))
        return Response(self.paginated(entries, id_prefix="req", serialize=entry_to_dict))
