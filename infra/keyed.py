"""Keyed statements: the few hand-written statements on every request's path that name their
rows by primary key, which PostgreSQL prepares at their first run on a connection and, after
its five custom plans, runs on the generic plan it keeps (docs/payments.md "Keyed statements").

Planning was most of PostgreSQL's CPU per create (~550 us of ~850: EXPLAIN ANALYZE of the
four statements, 2026-11-29), and psycopg's own preparing (the connection's
`prepare_threshold`) cannot be given only to them: every statement run often would be
prepared, and a generic plan of a merchant's filtered list walks a big merchant's rows for a
small one (docs/data.md "Reads at scale"). So the connection prepares nothing by itself
(config/settings/database.py) and `keyed_cursor` prepares what runs through it.

A generic plan is made without the parameters' values, once, from the statistics of that
moment; a condition a partial index's predicate matches (`used_at IS NULL`, `state =
'started'`) then let it walk that index instead of the key (measured: 1.7x PostgreSQL's CPU
at 8 clients). `by_key` writes such a WHERE so that only the key can serve it: the other
conditions go inside one `(...) IS TRUE`, which no index condition and no partial-index
predicate proof looks into, and which keeps a row exactly when they all hold.
tests/infra/test_keyed.py EXPLAINs every keyed statement of a create on analyzed and
unanalyzed tables.
"""

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections


def by_key(key: str, *conditions: str) -> str:
    """The WHERE clause's body: the key column equal to a parameter, and `conditions` (SQL,
    their parameters after the key's) hidden from the planner's choice of index."""
    if not conditions:
        return f"{key} = %s"
    return f"{key} = %s AND ({' AND '.join(conditions)}) IS TRUE"


@contextmanager
def keyed_cursor(using: str = DEFAULT_DB_ALIAS) -> Iterator:
    """A cursor whose statements PostgreSQL prepares (with parameters bound by the server);
    elsewhere, and with binding off (a pooler that cannot keep prepared statements), a plain
    cursor. Each statement runs on a psycopg cursor kept for it with the connection
    (`KeyedCursor`)."""
    connection = connections[using]
    if not _prepares(connection):
        with connection.cursor() as cursor:
            yield cursor
        return
    # Django's own `_cursor()`, the cursor made per statement (KeyedCursor.execute); its
    # ensure_connection() only when there is none (it connects then, and does nothing else).
    connection.close_if_health_check_failed()
    if connection.connection is None:
        connection.ensure_connection()
    psycopg_connection = connection.connection
    # Given back as it was: the connection's own threshold stays the settings' business.
    threshold, psycopg_connection.prepare_threshold = psycopg_connection.prepare_threshold, 0
    try:
        yield KeyedCursor(connection, psycopg_connection)
    finally:
        psycopg_connection.prepare_threshold = threshold


class KeyedCursor:
    """What `keyed_cursor` yields: each statement run on the psycopg cursor kept for its text on
    the psycopg connection (pooled connections change between requests; the cursors go with
    theirs), Django's errors raised for psycopg's as Django's cursor raises them.

    psycopg makes a statement's adapting state anew (its Transformer: the dumper of each
    parameter's type, the loader of each column's) on every execute, unless the cursor runs
    the very same query object it ran last. A cursor per statement, given the text it was
    kept under, runs each statement as its previous run left it: 4.3% of a create's
    instructions went to that state and its lookups.

    Django's cursor wrapper is made only where it adds something: the query log (DEBUG, the
    tests' query capture) and the connection's execute wrappers. Otherwise `execute` does what
    its `_execute` does, without the wrapper objects around each statement and fetch."""

    def __init__(self, connection, psycopg_connection):
        self._connection, self._psycopg_connection = connection, psycopg_connection
        self._ran = None  # the psycopg cursor of the last statement: its results

    def execute(self, sql: str, params=None) -> None:
        connection = self._connection
        sql, cursor = _statement_cursor(connection, self._psycopg_connection, sql)
        if connection.queries_logged or connection.execute_wrappers:
            connection._prepare_cursor(cursor).execute(sql, params)
        else:
            # Django's _prepare_cursor check, then its CursorWrapper._execute.
            connection.validate_thread_sharing()
            connection.validate_no_broken_transaction()
            with connection.wrap_database_errors:
                cursor.execute(sql, params)
        self._ran = cursor

    def fetchone(self):
        with self._connection.wrap_database_errors:
            return self._ran.fetchone()

    def fetchall(self):
        with self._connection.wrap_database_errors:
            return self._ran.fetchall()

    @property
    def rowcount(self) -> int:
        return self._ran.rowcount

    @property
    def cursor(self):
        """The psycopg cursor of the last statement (as Django's cursor names its own)."""
        return self._ran


KEPT_STATEMENTS = 64  # per connection, the least recently run closed first


def _statement_cursor(connection, psycopg_connection, sql: str) -> tuple[str, object]:
    """(the text `sql` was first kept under, its cursor): the same str object each time, which
    is what psycopg compares."""
    kept = getattr(psycopg_connection, "_keyed_cursors", None)
    if kept is None:
        kept = psycopg_connection._keyed_cursors = OrderedDict()
    entry = kept.get(sql)
    if entry is not None and not entry[1].closed:
        kept.move_to_end(sql)
        return entry
    entry = kept[sql] = (sql, connection.create_cursor())
    while len(kept) > KEPT_STATEMENTS:
        _, (_, oldest) = kept.popitem(last=False)
        oldest.close()
    return entry


def _prepares(connection) -> bool:
    return connection.vendor == "postgresql" and connection.settings_dict["OPTIONS"].get(
        "server_side_binding", False
    )
