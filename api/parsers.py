"""JSON in. Every body is read as JSON whatever its Content-Type (curl's `-d` sends a form
type by default): a body that does not parse is 400 `invalid_json`, never a silent form parse.
"""

import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


def _refuse_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def parse_json_body(raw: bytes):
    """Strict JSON: UTF-8 only, no NaN/Infinity."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ParseError("The request body is not valid JSON.") from exc


class AnyContentTypeJSONParser(BaseParser):
    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw.strip():
            return {}
        return parse_json_body(raw)
