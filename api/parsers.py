"""JSON in. Every body is read as JSON whatever its Content-Type (curl's `-d` sends a form
type by default): a body that does not parse is 400 `invalid_json`, never a silent form parse.
"""

import json
import re

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from api.errors import ValidationFailed, quoted
from api.fields import MAX_STRING_LENGTH


def _refuse_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def _refuse_unpaired_surrogates(value) -> None:
    """A `\\ud800` escape with no partner decodes to a string that is not Unicode text: it can
    be neither stored (PostgreSQL refuses it) nor sent back as UTF-8, so the body is refused
    here rather than as a 500 later (RFC 7493, I-JSON: strings must be valid Unicode)."""
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # UnicodeEncodeError if one is there


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object_without_duplicates(pairs: list) -> dict:
    """An object whose keys are unique (RFC 7493, I-JSON): `{"amount": 1, "amount": 100000}`
    is not read as whichever came last, which the guard, a proxy or a log reader may each
    read differently (issue 20)."""
    value = dict(pairs)
    if len(value) < len(pairs):
        seen = set()
        raise _DuplicateKey(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return value


def parse_json_body(raw: bytes):
    """Strict JSON: UTF-8 only, no NaN/Infinity, no unpaired surrogate escapes, no key twice
    in one object (400 `invalid_json`, the key named)."""
    try:
        value = json.loads(
            raw.decode("utf-8"),
            parse_constant=_refuse_constant,
            object_pairs_hook=_object_without_duplicates,
        )
        if b"\\u" in raw:  # raw UTF-8 cannot carry a surrogate; only an escape can
            _refuse_unpaired_surrogates(value)
        return value
    except _DuplicateKey as exc:
        raise ValidationFailed(
            f"The request body is not valid JSON: an object holds the key {quoted(exc.key)} "
            "more than once.",
            code="invalid_json",
        ) from None
    except (UnicodeError, ValueError, RecursionError) as exc:
        raise ParseError("The request body is not valid JSON.") from exc


def request_body(request) -> bytes:
    """The raw body, refused past DATA_UPLOAD_MAX_MEMORY_SIZE (Django checks the declared
    length before reading a byte). 400, not 413: the spec ties each status to an error type,
    and a body too large is a malformed request (docs/request-safety.md)."""
    try:
        return request.body
    except RequestDataTooBig as exc:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise ValidationFailed(
            f"The request body is larger than the {limit} bytes allowed.", code="request_too_large"
        ) from exc


# Objects and arrays a request body may hold. The largest request the spec defines holds a
# few (the body, `metadata`, `payment_method`, `enabled_events`); each costs the JSON parser
# and the raw-card guard a Python step, and 256 KiB of `[],` is 87,000 of them: 40-90 ms
# of CPU for nothing any endpoint reads (docs/request-safety.md, "Request-shape limit").
MAX_BODY_CONTAINERS = 1000
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')


def _containers_within(raw: bytes, limit: int) -> bool:
    """Whether the body holds at most `limit` objects and arrays (its `{` and `[` outside
    strings): the count of every bracket first, an upper bound read in a C pass each, and
    only past the limit the exact count, with the strings taken out."""
    if raw.count(b"{") + raw.count(b"[") <= limit:
        return True
    unquoted = _JSON_STRING.sub(b"", raw)
    return unquoted.count(b"{") + unquoted.count(b"[") <= limit


def refuse_overcomplex_body(raw: bytes) -> None:
    """400 `request_too_complex` for a body of more objects and arrays than any request
    needs, before it is parsed or scanned."""
    if not _containers_within(raw, MAX_BODY_CONTAINERS):
        raise ValidationFailed(
            f"The request body holds more than {MAX_BODY_CONTAINERS} JSON objects and arrays.",
            code="request_too_complex",
        )


def refuse_overlong_query_values(request) -> None:
    """400 `invalid_parameter` naming a query parameter longer than any string input may be
    (`MAX_STRING_LENGTH`): a filter, a cursor or an id is far shorter, and no value quoted in
    an error then grows with the input (docs/api-conventions.md "String lengths")."""
    if len(request.META.get("QUERY_STRING", "")) <= MAX_STRING_LENGTH:
        return  # decoding only shortens: no value can be longer (and a POST parses nothing)
    for name, values in request.query_params.lists():
        if any(len(value) > MAX_STRING_LENGTH for value in values):
            raise ValidationFailed(
                f"{quoted(name)} must be at most {MAX_STRING_LENGTH} characters.",
                param=name[:MAX_STRING_LENGTH],
            )


# Methods whose requests carry no content here: a body sent with one is refused unread.
BODYLESS_METHODS = frozenset({"GET", "HEAD", "DELETE"})


def refuse_any_body(request) -> None:
    """400 `body_not_allowed` for a GET, HEAD or DELETE that declares a body, before a byte of
    it is read or scanned: no endpoint reads one, and a client that sends one (card data
    included) is told so rather than silently ignored (docs/request-safety.md, "Bodies on
    GET, HEAD and DELETE")."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0  # as Django reads it: no body
    if declared > 0:
        raise ValidationFailed(
            f"{request.method} requests take no body: send parameters in the query string.",
            code="body_not_allowed",
        )


class AnyContentTypeJSONParser(BaseParser):
    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw.strip():
            return {}
        return parse_json_body(raw)
