"""The configuration revision, and the per-process caches kept under it.

The revision is one value in Redis, replaced after commit by any change to data that some
process keeps in memory: API keys and merchants (accounts.keycache), webhook endpoints (the
fan-out's endpoint lists). A cache reads the revision first, then the database, and stores the
rows under the revision it read; an entry is served only while the revision is still that
value. So every process drops what it holds once a change commits, and a change committed
during a database read leaves that read's entry under an old revision, never served.

Within an HTTP request the revision is read from Redis once, by its first reader
(authentication); later readers in the same request (the fan-out of the events it writes)
reuse that value, so a request sees the configuration as of its start. Outside a request
(Celery tasks, beat, commands) every read goes to Redis.

Without Redis (the embedded defaults) or when Redis fails the revision is None: nothing is
cached; while Redis is known to be down its breaker (api/breaker.py) makes that None at once.
Writes that bypass the model signals (`QuerySet.update()`, SQL by hand) must call `bump()`;
`MAX_AGE` bounds what a missed bump can cost.
"""

import secrets
import threading
import time
from collections import OrderedDict

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from redis.exceptions import RedisError

from api.breaker import Unavailable
from api.redisclient import primary_client, server_breaker

KEY = "config:revision"
MAX_AGE = 60.0  # seconds an entry is served at most; a backstop, not the invalidation

_OUTSIDE, _UNREAD = object(), object()


class _Request(threading.local):
    # _OUTSIDE when this thread is not serving a request; within one, _UNREAD until the
    # request's first reader has read the revision, then what it read (None included).
    revision = _OUTSIDE


_request = _Request()


def request_started(**kwargs) -> None:
    """Signal receiver: a request's first reader reads afresh, whatever an earlier request on
    this thread read (also when its request_finished was sent elsewhere or not at all)."""
    _request.revision = _UNREAD


def request_finished(**kwargs) -> None:
    """Signal receiver: what runs on this thread next (a task, a command) reads Redis."""
    _request.revision = _OUTSIDE


def current() -> bytes | None:
    """The revision to look entries up and store them under; None: cache nothing."""
    revision = _request.revision
    if revision is _OUTSIDE:
        return _read()
    if revision is _UNREAD:
        revision = _request.revision = _read()
    return revision


def _store():
    """(client, key) of the revision, or (None, None) when the cache is not Redis."""
    cache = caches["default"]
    client = primary_client(cache)  # never a replica: a lagging one would serve old entries
    if client is None:
        return None, None
    return client, cache.make_and_validate_key(KEY)


def _read() -> bytes | None:
    client, key = _store()
    if client is None:
        return None
    try:
        return server_breaker(client).call(_read_or_start, client, key)
    except (RedisError, Unavailable):
        # Authentication and payments must not depend on Redis (the breaker logs it).
        return None


def _read_or_start(client, key) -> bytes | None:
    value = client.get(key)
    if value is None:
        # First use, or Redis lost it: start from a value no entry was ever stored under.
        value = secrets.token_hex(8).encode()
        if not client.set(key, value, nx=True):
            return None  # another process set one first
    return value


def bump() -> None:
    """Every process drops its entries once the current transaction commits (at once outside
    one). Not tied to the cache settings: other processes may cache. A failure is logged, not
    raised: the change itself is committed."""
    transaction.on_commit(_set_new, robust=True)


def _set_new() -> None:
    client, key = _store()
    if client is not None:
        server_breaker(client).call(client.set, key, secrets.token_hex(8))


def bump_on_change(sender, **kwargs) -> None:
    """post_save / post_delete receiver for the models the caches hold."""
    bump()


class RevisionCache:
    """A per-process LRU of values, each stored under the revision read before it was read.
    `setting` names the boolean setting that turns it on; off, nothing is cached."""

    def __init__(self, setting: str, max_entries: int):
        self.setting, self.max_entries = setting, max_entries
        self._entries: OrderedDict = OrderedDict()  # key -> [revision, stored at, value]
        self._lock = threading.Lock()

    def get(self, key) -> tuple[bytes | None, object]:
        """(revision, value): the revision to `put` a value read now under, and the value
        stored for `key` under it, or None (a miss, too old, or nothing cached)."""
        revision = current() if getattr(settings, self.setting) else None
        if revision is None:
            return None, None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != revision or time.monotonic() - entry[1] > MAX_AGE:
                return revision, None
            self._entries.move_to_end(key)
            return revision, entry[2]

    def put(self, key, revision: bytes | None, value) -> None:
        if revision is None:
            return
        with self._lock:
            self._entries[key] = [revision, time.monotonic(), value]
            self._entries.move_to_end(key)
            if len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)  # a miss costs only the query it saved

    def update(self, key, change) -> None:
        """Replace the value stored for `key` (if any) by change(value), keeping its revision
        and age."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry[2] = change(entry[2])

    def __len__(self) -> int:
        return len(self._entries)
