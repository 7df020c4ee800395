"""JSON in. Every body is read as JSON whatever its Content-Type (curl's `-d` sends a form
type by default): a body that does not parse is 400 `invalid_json`, never a silent form parse.
"""

import json

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from api.errors import ValidationFailed


def _refuse_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def parse_json_body(raw: bytes):
    """Strict JSON: UTF-8 only, no NaN/Infinity."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
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


class AnyContentTypeJSONParser(BaseParser):
    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw.strip():
            return {}
        return parse_json_body(raw)
