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


def _cursor_payload(value: str) -> str:
    """What an opaque cursor carries, or "" when `value` is not one of ours."""
    try:
        decoded = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return ""
    return decoded[len(_CURSOR_TAG) :] if decoded.startswith(_CURSOR_TAG) else ""


def decode_cursor(value: str, id_prefix: str, param: str) -> str:
    """A cursor or a bare id of this list's resource -> the id; anything else is 400."""
    if is_id(value, id_prefix):
        return value
    item_id = _cursor_payload(value)
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


def _page_parameters(params) -> tuple[int, str | None, str | None]:
    limit = parse_limit(params)
    after, before = params.get("starting_after"), params.get("ending_before")
    if after and before:
        raise ValidationFailed(
            "Send starting_after or ending_before, not both.", param="ending_before"
        )
    return limit, after, before


def paginate(queryset, params, *, id_prefix: str) -> tuple[list, bool, str | None]:
    """-> (items newest first, has_more, next_cursor).

    `has_more` says whether more items lie beyond this page in the direction being paged:
    older ones with `starting_after` (or no cursor), newer ones with `ending_before`.
    `next_cursor` continues in that same direction, passed back as the same parameter.
    """
    limit, after, before = _page_parameters(params)
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


def paginate_fixed(items: list, params, *, key) -> tuple[list, bool, str | None]:
    """`paginate` for a fixed list kept in code, in its own order (the test-card table): the
    same parameters and answers (spec "Pagination" holds on every list); `key(item)` names an
    item inside a cursor. Only opaque cursors are taken: such items have no resource id."""
    limit, after, before = _page_parameters(params)
    keys = [key(item) for item in items]

    def position(value: str, param: str) -> int:
        payload = _cursor_payload(value)
        if payload not in keys:
            raise ValidationFailed(f"Invalid cursor in {param}.", param=param)
        return keys.index(payload)

    if before:
        end = position(before, "ending_before")
        start = max(0, end - limit)
        page, has_more = items[start:end], start > 0
        edge = page[0] if page else None
    else:
        start = position(after, "starting_after") + 1 if after else 0
        page, has_more = items[start : start + limit], start + limit < len(items)
        edge = page[-1] if page else None
    next_cursor = encode_cursor(key(edge)) if has_more and edge is not None else None
    return page, has_more, next_cursor


def list_envelope(data: list, has_more: bool, next_cursor: str | None, **extra) -> dict:
    return {
        "object": "list",
        "data": data,
        "has_more": has_more,
        "next_cursor": next_cursor,
        **extra,
    }
