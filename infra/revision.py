"""The configuration revision, and the per-process caches kept under it.

The revision is one row in PostgreSQL (`api_config_revision`, api/migrations/0003). Every write
to data that some process keeps in memory (API keys and merchants: accounts.keycache; webhook
endpoints: the fan-out's endpoint lists; test-mode failure profiles: sandbox.profiles) calls
`changed()` inside its own transaction, so the change and the new revision commit together or
not at all, whatever Redis does. The writers: `grep -rn "revision.changed()"`
(accounts/services.py, accounts/admin.py, webhooks/lifecycle.py's `endpoints_changing` for
every endpoint write, sandbox/profiles.py's `profile_set`);
tests/infra/test_revision_writers.py goes through each write path.

A cache reads the revision first, then the database, and stores the rows under the revision it
read; an entry is served only while the revision is still that value. So every process drops
what it holds at the next read after a change commits, and a change committed during a database
read leaves that read's entry under an old revision, never served.

Reading it is one primary-key read of a one-row table (`current()`; the fan-out reads it with
its own, webhooks/selectors.py). Within a request it is read once: the value the first cache
asked for serves every later one until the request ends or `changed()` runs in it (the
request is then as if it had started a moment earlier, which any request may be). Outside a
request (tasks, commands) every `current()` reads. On another database (the embedded SQLite)
there is no revision: nothing is cached.

A request whose first statement reads the revision itself (an idempotent POST: its claim,
api.idempotency) need not read it first: it may `assume` the revision an entry it uses is
stored under, and that statement `confirm`s it. Nothing is written or answered on an assumed
revision: the claim writes nothing unless the revision is the one assumed, and a request
that answers before its claim confirms first (api.views.ServiceAPIView). When the revision
has moved, the request is as if it had started then: it looks up again what it had
assumed (its key), under the revision read. `MAX_AGE` bounds what a write that does not call
`changed()` costs (an `UPDATE` by hand in a shell, rows restored from a backup): it is seen
within 60 s.
"""

import threading
import time
from collections import OrderedDict

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connection

from infra.keyed import keyed_cursor

MAX_AGE = 60.0  # seconds an entry is served at most; a backstop, not the invalidation
SQL = "SELECT value FROM api_config_revision WHERE id = 1"
# A new random value, not a counter: a database restored from a backup must not return to a
# value some process stored an entry under.
CHANGE_SQL = "UPDATE api_config_revision SET value = floor(random() * 9e18)::bigint WHERE id = 1"


def changed() -> None:
    """What every process caches under the revision is no longer true once this transaction
    commits. Call it in the transaction that writes a key, a merchant or an endpoint: called
    outside one, the new revision could commit before the change, and a process reading in
    between would keep the old rows under it."""
    if connection.vendor != "postgresql":
        return
    if not connection.in_atomic_block:
        raise RuntimeError("revision.changed() must run inside the transaction of the change")
    with connection.cursor() as cursor:
        cursor.execute(CHANGE_SQL)
    _unread()


def current() -> int | None:
    """The revision to look entries up and store them under; None: cache nothing. Read once
    per request (the module's docstring)."""
    if not getattr(_this_request, "active", False):
        return read(SQL, [])
    if _this_request.value is _UNREAD:
        _this_request.value = read(SQL, [])
    return _this_request.value


class Moved(Exception):
    """The revision a request assumed is not the current one: what it took under it (its
    key) must be looked up again before it goes on."""


def will_confirm() -> None:
    """This request's first statement reads the revision and writes nothing unless it is the
    one assumed (the idempotency claim): a cache may `assume` until then."""
    if getattr(_this_request, "active", False) and _this_request.value is _UNREAD:
        _this_request.may_assume = True


def assumable() -> bool:
    """Whether a cache may take an entry's revision as this request's without a read."""
    return getattr(_this_request, "may_assume", False) and _this_request.value is _UNREAD


def assume(value: int) -> None:
    """`value` (what an entry used is stored under) is this request's revision, unconfirmed."""
    _this_request.value, _this_request.assumed = value, True


def assumed() -> int | None:
    """The revision this request assumed and has not confirmed yet; None otherwise."""
    return _this_request.value if getattr(_this_request, "assumed", False) else None


def confirm(value: int | None) -> bool:
    """The revision as the request's statement read it: the request's from now on. -> whether
    it is the one assumed (if not, what the request took under it must be looked up again)."""
    held = value == _this_request.value
    _this_request.value, _this_request.assumed = value, False
    _this_request.may_assume = False
    return held


def read(sql: str, params: list) -> int | None:
    """The revision as `sql` returns it; None off PostgreSQL."""
    if connection.vendor != "postgresql":
        return None
    with keyed_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else row[0]


_CURRENT = object()
_UNREAD = object()
# .active: inside a request; .value: its revision, once read (or assumed: .assumed);
# .may_assume: its first statement will confirm it (will_confirm).
_this_request = threading.local()


def _request_starts(**kwargs) -> None:
    _request_is(active=True)


def _request_ends(**kwargs) -> None:
    _request_is(active=False)


def _request_is(*, active: bool) -> None:
    _this_request.active = active
    _unread()


def _unread() -> None:
    """The request's revision is to be read again (nothing assumed, nothing to assume)."""
    _this_request.value = _UNREAD
    _this_request.assumed = _this_request.may_assume = False


request_started.connect(_request_starts, dispatch_uid="infra.revision")
request_finished.connect(_request_ends, dispatch_uid="infra.revision")


class RevisionCache:
    """A per-process LRU of values, each stored under the revision read before it was read.
    `setting` names the boolean setting that turns it on; off, nothing is cached."""

    def __init__(self, setting: str, max_entries: int):
        self.setting, self.max_entries = setting, max_entries
        self._entries: OrderedDict = OrderedDict()  # key -> [revision, stored at, value]
        self._lock = threading.Lock()

    def get(self, key, revision=_CURRENT) -> tuple[int | None, object]:
        """(revision, value): the revision to `put` a value read now under (`current()`, read
        only when the cache is on, unless the caller read it), and the value stored for `key`
        under it, or None (a miss, too old, or nothing cached)."""
        if not getattr(settings, self.setting):
            return None, None
        if revision is _CURRENT:
            revision = current()
        if revision is None:
            return None, None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != revision or time.monotonic() - entry[1] > MAX_AGE:
                return revision, None
            self._entries.move_to_end(key)
            return revision, entry[2]

    def latest(self, key) -> tuple[int, object] | None:
        """(revision, value) stored for `key` and not too old, whatever the revision is now
        (no query is made): for a writer that checks that revision in its own statement."""
        if not getattr(settings, self.setting):
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or time.monotonic() - entry[1] > MAX_AGE:
                return None
            return entry[0], entry[2]

    def holds(self, key) -> bool:
        """An entry is stored for `key`, whatever its revision (no query is made to know)."""
        with self._lock:
            return key in self._entries

    def put(self, key, revision: int | None, value) -> None:
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
