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
    cursor. The psycopg cursor underneath is kept with its connection (`_kept_cursor`)."""
    connection = connections[using]
    if not _prepares(connection):
        with connection.cursor() as cursor:
            yield cursor
        return
    # Django's own `_cursor()`, with the kept cursor where it makes a new one.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    psycopg_connection = connection.connection
    with connection.wrap_database_errors:
        cursor = connection._prepare_cursor(_kept_cursor(connection, psycopg_connection))
    # Given back as it was: the connection's own threshold stays the settings' business.
    threshold, psycopg_connection.prepare_threshold = psycopg_connection.prepare_threshold, 0
    try:
        yield cursor
    finally:
        psycopg_connection.prepare_threshold = threshold


def _kept_cursor(connection, psycopg_connection):
    """One psycopg cursor per pooled connection for its keyed statements, made once: a new
    one per statement built its adapters map and looked up a dumper for every parameter
    again (psycopg keeps both per cursor)."""
    cursor = getattr(psycopg_connection, "_keyed_cursor", None)
    if cursor is None or cursor.closed:
        cursor = psycopg_connection._keyed_cursor = connection.create_cursor()
    return cursor


def _prepares(connection) -> bool:
    return connection.vendor == "postgresql" and connection.settings_dict["OPTIONS"].get(
        "server_side_binding", False
    )
