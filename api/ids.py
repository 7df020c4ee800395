"""Prefixed ULID ids: `pay_` + 26 uppercase Crockford base32 characters, sortable by creation.

The generator is monotonic within a process: two ids made in the same millisecond still sort
in creation order, so "newest first" by id is exact for one process and millisecond-exact
across processes.
"""

import datetime
import os
import re
import threading
import time

from django.db import models

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ULID_RE = r"[0-9A-HJKMNP-TV-Z]{26}"
_RANDOM_BITS = 80

_lock = threading.Lock()
_last_ms = -1
_last_random = 0


# Two characters (10 bits) a step: half the steps of one a step (ids are made ~5 times a
# payment create).
_PAIRS = [first + second for first in CROCKFORD for second in CROCKFORD]


def _encode(value: int, length: int) -> str:
    """The low `length` x 5 bits of `value` in `length` Crockford characters."""
    chars = []
    if length % 2:
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    for _ in range(length // 2):
        chars.append(_PAIRS[value & 1023])
        value >>= 10
    return "".join(reversed(chars))


def new_ulid() -> str:
    global _last_ms, _last_random
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms <= _last_ms:
            # Same (or a clock that stepped back): keep the last time, bump the random part.
            now_ms = _last_ms
            _last_random = (_last_random + 1) % (1 << _RANDOM_BITS)
        else:
            _last_ms = now_ms
            _last_random = int.from_bytes(os.urandom(10), "big")
        return _encode(now_ms << _RANDOM_BITS | _last_random, 26)


def new_id(prefix: str) -> str:
    """`new_id("pay")` -> `pay_01J...`."""
    return f"{prefix}_{new_ulid()}"


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MS = datetime.timedelta(milliseconds=1)


def id_floor(prefix: str, moment: datetime.datetime) -> str:
    """The lowest id of `prefix` that can be made at `moment` or later: a bound on time that
    an index on the id serves (`id >= id_floor(T)` is "made at T or later")."""
    ms = min(max(0, (moment - _EPOCH) // _MS), (1 << 48) - 1)
    return f"{prefix}_{_encode(ms, 10)}{CROCKFORD[0] * 16}"


# How far an id and its row's `created` may lie apart: payments made before 2026-11-25 took
# `created` when the connector answered, after their id; a request-log entry takes it when the
# request ends; a clock stepping back makes ids run ahead of it (ids stay ordered). Beyond
# the bounds, `created` decides.
ID_SLACK = datetime.timedelta(minutes=10)


def created_window(prefix: str, start, end) -> models.Q:
    """`start <= created < end` (either may be None) written through the id, which is made
    with `created`: the list's index starts and stops at the window instead of walking every
    newer row of the merchant (docs/data.md "Reads at scale"). `created` decides only within
    ID_SLACK of an edge; said so, the planner also sees that most of the id range matches
    (`created` and the id bounds as separate conditions, it multiplied their selectivities
    and read a whole day of every merchant's payments for a page)."""
    Q = models.Q
    window = Q()
    if start is not None:
        window &= Q(pk__gte=id_floor(prefix, _shifted(start, -ID_SLACK)))
        window &= Q(pk__gte=id_floor(prefix, _shifted(start, ID_SLACK))) | Q(created__gte=start)
    if end is not None:
        window &= Q(pk__lt=id_floor(prefix, _shifted(end, ID_SLACK)))
        window &= Q(pk__lt=id_floor(prefix, _shifted(end, -ID_SLACK))) | Q(created__lt=end)
    return window


def _shifted(moment: datetime.datetime, delta: datetime.timedelta) -> datetime.datetime:
    try:
        return moment + delta
    except OverflowError:  # at datetime's ends; id_floor clamps to the ids' own range anyway
        return moment


def id_time(item_id: str) -> datetime.datetime:
    """When an id was made, to the millisecond (its first 10 characters after the prefix)."""
    ms = 0
    for char in item_id.partition("_")[2][:10]:
        ms = ms * 32 + CROCKFORD.index(char)
    return _EPOCH + ms * _MS


def id_pattern(prefix: str) -> re.Pattern:
    return re.compile(rf"^{prefix}_{ULID_RE}$")


def is_id(value: object, prefix: str) -> bool:
    return isinstance(value, str) and bool(id_pattern(prefix).match(value))


class _IdDefault:
    """A picklable default callable; kept out of migrations by PrefixedIdField.deconstruct."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def __call__(self) -> str:
        return new_id(self.prefix)


class PrefixedIdField(models.CharField):
    """Primary key of the form `<prefix>_<ULID>`."""

    def __init__(self, *args, prefix: str, **kwargs):
        self.prefix = prefix
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("primary_key", True)
        kwargs.setdefault("editable", False)
        kwargs["default"] = _IdDefault(prefix)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs.pop("default", None)
        kwargs["prefix"] = self.prefix
        return name, path, args, kwargs
