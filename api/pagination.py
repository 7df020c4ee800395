"""Cursor pagination shared by every list (spec "Pagination").

Results are newest first, ordered by the ULID primary key (which sorts by creation time).
A cursor is opaque (base64url of a versioned id); a bare resource id is accepted too.
"""

import base64
import binascii

from api.errors import ValidationFailed
from api.ids import is_id

DEFAULT_LIMIT = 25
MAX_LIMIT = 100
_CURSOR_TAG = "c1:"


def encode_cursor(item_id: str) -> str:
    return base64.urlsafe_b64encode((_CURSOR_TAG + item_id).encode()).decode().rstrip("=")


def decode_cursor(value: str, id_prefix: str, param: str) -> str:
    """A cursor or a bare id of this list's resource -> the id; anything else is 400."""
    if is_id(value, id_prefix):
        return value
    try:
        decoded = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        decoded = ""
    item_id = decoded[len(_CURSOR_TAG) :] if decoded.startswith(_CURSOR_TAG) else ""
    if not is_id(item_id, id_prefix):
        raise ValidationFailed(f"Invalid cursor in {param}.", param=param)
    return item_id


def parse_limit(params) -> int:
    raw = params.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_LIMIT:
        raise ValidationFailed(f"limit must be an integer from 1 to {MAX_LIMIT}.", param="limit")
    return int(raw)


def paginate(queryset, params, *, id_prefix: str) -> tuple[list, bool, str | None]:
    """-> (items newest first, has_more, next_cursor).

    `has_more` says whether more items lie beyond this page in the direction being paged:
    older ones with `starting_after` (or no cursor), newer ones with `ending_before`.
    `next_cursor` continues in that same direction, passed back as the same parameter.
    """
    limit = parse_limit(params)
    after, before = params.get("starting_after"), params.get("ending_before")
    if after and before:
        raise ValidationFailed(
            "Send starting_after or ending_before, not both.", param="ending_before"
        )
    if before:
        anchor = decode_cursor(before, id_prefix, "ending_before")
        rows = list(queryset.filter(pk__gt=anchor).order_by("pk")[: limit + 1])
        has_more = len(rows) > limit
        items = list(reversed(rows[:limit]))
        edge = items[0] if items else None
    else:
        if after:
            queryset = queryset.filter(pk__lt=decode_cursor(after, id_prefix, "starting_after"))
        rows = list(queryset.order_by("-pk")[: limit + 1])
        has_more = len(rows) > limit
        items = rows[:limit]
        edge = items[-1] if items else None
    next_cursor = encode_cursor(edge.pk) if has_more and edge is not None else None
    return items, has_more, next_cursor


def list_envelope(data: list, has_more: bool, next_cursor: str | None, **extra) -> dict:
    return {
        "object": "list",
        "data": data,
        "has_more": has_more,
        "next_cursor": next_cursor,
        **extra,
    }
