"""JSON out: compact, UTF-8 (`application/json; charset=utf-8`), RFC 3339 `Z` timestamps."""

import datetime
import functools
import json

import orjson
from rest_framework.renderers import JSONRenderer


@functools.lru_cache(maxsize=256)
def format_timestamp(value: datetime.datetime | None) -> str | None:
    """RFC 3339 UTC at second precision with a literal `Z`; `None` for a time not yet reached.
    Kept for the last values (a create formats each of its payment's times twice: its event's
    copy, its answer's); equal instants are equal datetimes in any zone, and write the same."""
    if value is None:
        return None
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Encoder(json.JSONEncoder):
    def default(self, o):
        if isinstance(o, datetime.datetime):
            return format_timestamp(o)
        return super().default(o)


# Datetimes (and dates, times, dataclasses) go to `_default`, as with the standard library:
# orjson would write its own formats for them.
_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def _default(value):
    if isinstance(value, datetime.datetime):
        return format_timestamp(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(data) -> bytes:
    """The one JSON encoding of the service (API responses, error pages, event payloads).

    orjson writes what the standard library's compact, non-ASCII form wrote (keys in order,
    the same escapes; a float in exponent form may be spelled otherwise, `0.00001` for
    `1e-05`, the same number) for less than half its CPU (20 against 50 us for a payment):
    every answer is rendered (docs/payments.md "Where a create's CPU goes"). What orjson
    refuses, the standard library writes as before: an integer past 64 bits, a key that is
    not a string, an unpaired surrogate (escaped below); or it raises (a type JSON has no
    form for)."""
    try:
        return orjson.dumps(data, default=_default, option=_PASSTHROUGH)
    except orjson.JSONEncodeError:
        return _stdlib_dumps(data)


def _stdlib_dumps(data) -> bytes:
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
