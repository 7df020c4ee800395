"""Django's PostgreSQL backend, with its check of a connection before a request uses it
replaced, and its timestamptz loader where psycopg's own gives what it gives (settings: ENGINE
`config.postgresql`; docs/dependencies.md).

A connection is checked before each request's first statement (CONN_HEALTH_CHECKS), so none the
server dropped (a restart, a failover, pg_terminate_backend) fails a request. Django's check of
a connection a thread keeps (`is_usable`), and psycopg_pool's of one it hands out
(ConnectionPool.check_connection) with DATABASE_POOL, each send a query: one round trip, and a
statement in PostgreSQL, on every request (~5-8% of a payment create's app and PostgreSQL CPU,
docs/payments.md). Ours asks the connection's socket instead: an idle connection has nothing to
read until it asks something, so data or end-of-file there means the server dropped it (a
restart or pg_terminate_backend sends its FATAL, then closes). One poll, no round trip.

A restart kills every connection at once, and psycopg_pool discards one dead connection and
tries the next after a backoff of 1, 2, 4 ... seconds: a pool holding more than three waited
past its 10 s timeout and the request answered 500 (tests/api/test_database_restart.py). So
at the first dead one this check has the pool check every idle connection
(ConnectionPool.check, the empty query each): the next try gets a live or a new connection.
A connection kept by a thread is replaced by a new one for that thread alone.
"""

import datetime
import functools
import select

import psycopg
from django.db.backends.postgresql import base
from psycopg._cmodule import _psycopg
from psycopg.adapt import AdaptersMap, Loader
from psycopg_pool import ConnectionPool


def check_pooled_connection(connection) -> None:
    """Raises psycopg.OperationalError, as the pool's own check would, for a connection the
    server dropped."""
    if not dropped_by_the_server(connection):
        return
    pool = getattr(connection, "_pool", None)  # set by the pool before it checks
    if pool is not None:
        pool.check()
    raise psycopg.OperationalError("the server closed the connection")


def dropped_by_the_server(connection) -> bool:
    """Whether an idle connection is closed, broken, or has something to read (a
    notification would read as one too: nothing here LISTENs, and a false alarm costs one
    new connection)."""
    if connection.closed or connection.pgconn.status != psycopg.pq.ConnStatus.OK:
        return True
    poller = select.poll()  # not select.select(): a descriptor past 1024 is fine
    poller.register(connection.fileno(), select.POLLIN)
    return bool(poller.poll(0))


class UtcTimestamptzLoader(Loader):
    """psycopg's C loader of a timestamptz, for connections whose time zone is UTC (Django sets
    it on every connection when USE_TZ and no DATABASES TIME_ZONE): it gives an aware datetime
    in `datetime.timezone.utc`, as Django's loader does. Django's subclasses psycopg's
    pure-Python loader, which parses the text in Python: ~3.3 us a value against ~0.6 here
    (a create loads its token's timestamps)."""

    timezone = datetime.UTC  # compared by Django's create_cursor with its own

    def __init__(self, oid: int, context=None):
        super().__init__(oid, context)
        self._load = _psycopg.TimestamptzLoader(oid, context).load

    def load(self, data):
        return self._load(data)


@functools.cache
def _with_utc_loader(adapters: AdaptersMap) -> AdaptersMap:
    """Django's adapters template (one per time zone: it caches them) with our loader."""
    with_loader = AdaptersMap(adapters)
    with_loader.register_loader("timestamptz", UtcTimestamptzLoader)
    return with_loader


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        """A connection a thread kept may serve its next request: the server has not dropped it,
        and nothing left a transaction open on it (the pool rolls such a one back; a kept one
        is closed and replaced)."""
        connection = self.connection
        return (
            connection is not None
            and not dropped_by_the_server(connection)
            and connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        )

    def get_connection_params(self):
        params = super().get_connection_params()
        if _psycopg is not None and self.timezone is datetime.UTC:
            params["context"] = _with_utc_loader(params["context"])
        return params

    @property
    def pool(self):
        pool = super().pool
        # Django builds the pool with check=ConnectionPool.check_connection and offers no
        # setting for another; psycopg_pool keeps it in `_check` (pinned: psycopg-pool 3.3.3).
        if pool is not None and pool._check is ConnectionPool.check_connection:
            pool._check = check_pooled_connection
        return pool
