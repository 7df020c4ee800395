"""JSON out: compact, UTF-8 (`application/json; charset=utf-8`), RFC 3339 `Z` timestamps."""

import datetime
import json

from rest_framework.renderers import JSONRenderer


def format_timestamp(value: datetime.datetime | None) -> str | None:
    """RFC 3339 UTC at second precision with a literal `Z`; `None` for a time not yet reached."""
    if value is None:
        return None
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Encoder(json.JSONEncoder):
    def default(self, o):
        if isinstance(o, datetime.datetime):
            return format_timestamp(o)
        return super().default(o)


def dumps(data) -> bytes:
    """The one JSON encoding of the service (API responses, error pages, event payloads)."""
    try:
        return json.dumps(data, cls=_Encoder, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        # An unpaired surrogate (say an error naming a field whose key is one, found by the
        # raw-card guard before the body is parsed) has no UTF-8 form: escape it instead of
        # failing the response. Stored data never holds one (api.parsers refuses them).
        return json.dumps(data, cls=_Encoder, ensure_ascii=True, separators=(",", ":")).encode()


class ServiceJSONRenderer(JSONRenderer):
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        return dumps(data)
