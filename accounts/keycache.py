"""A per-process cache of the API-key lookup that authenticates every request
(docs/api-conventions.md "Keys").

An entry holds the key-and-merchant row as the database returned it; each request builds
fresh instances from it, so nothing one request changes is seen by another. An entry is used
only while the "accounts revision" in Redis is still the value read before its row was read:
every committed change to a key or a merchant sets a new revision, and every process drops
what it holds at its next request. Read first, store under what was read: a change committed
during the database read leaves the entry under an old revision, never served.

Without Redis (the embedded defaults), with `API_KEY_CACHE` off, or when Redis fails, nothing
is cached: every request reads the database. Writes that bypass the model signals
(`QuerySet.update()`, SQL by hand) must call `bump()`; `MAX_AGE` bounds what a missed bump
can cost.
"""

import secrets
import threading
import time
from collections import OrderedDict

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from redis.exceptions import RedisError

from api.redisclient import primary_client

MAX_ENTRIES = 4096  # LRU beyond it: a miss costs only the query the cache saves
MAX_AGE = 60.0  # seconds; a backstop, not the invalidation
REVISION = "accounts:revision"

_entries: OrderedDict = OrderedDict()  # key -> [revision, stored at, row, last_used_at]
_lock = threading.Lock()


def _revision_store():
    """(client, key) of the revision, or (None, None) when the cache is not Redis."""
    cache = caches["default"]
    client = primary_client(cache)
    if client is None:
        return None, None
    return client, cache.make_and_validate_key(REVISION)


def revision() -> bytes | None:
    """The revision to look up and store entries under; None: cache nothing."""
    if not settings.API_KEY_CACHE:
        return None
    client, key = _revision_store()
    if client is None:
        return None
    try:
        value = client.get(key)
        if value is None:
            # First use, or Redis lost it: start from a value no entry was ever stored under.
            value = secrets.token_hex(8).encode()
            if not client.set(key, value, nx=True):
                return None  # another process set one first
        return value
    except RedisError:
        # Authentication must not depend on Redis (the rate limiter logs that it is down).
        return None


def bump() -> None:
    """Every process drops its entries once the current transaction commits (at once outside
    one). Not tied to API_KEY_CACHE: other processes may cache. A failure is logged, not
    raised: the change itself is committed."""
    transaction.on_commit(_set_new_revision, robust=True)


def _set_new_revision() -> None:
    client, key = _revision_store()
    if client is not None:
        client.set(key, secrets.token_hex(8))


def bump_on_change(sender, **kwargs) -> None:
    """post_save / post_delete receiver for ApiKey and Merchant."""
    bump()


def get(key: str, revision: bytes | None) -> tuple | None:
    """(row, last_used_at) stored for `key` under `revision`, unless too old."""
    if revision is None:
        return None
    with _lock:
        entry = _entries.get(key)
        if entry is None or entry[0] != revision or time.monotonic() - entry[1] > MAX_AGE:
            return None
        _entries.move_to_end(key)
        return entry[2], entry[3]


def put(key: str, revision: bytes | None, row: tuple, last_used_at) -> None:
    if revision is None:
        return
    with _lock:
        _entries[key] = [revision, time.monotonic(), row, last_used_at]
        _entries.move_to_end(key)
        if len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


def touched(key: str, last_used_at) -> None:
    """The key's use was recorded: keeps its entry's last_used_at in step, so the next
    request does not record it again within the minute (no bump: nothing reads it to decide)."""
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            entry[3] = last_used_at
