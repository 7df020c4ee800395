"""Schema operations the apps' migrations share."""

from django.contrib.postgres.operations import AddIndexConcurrently as PostgresAddIndexConcurrently
from django.contrib.postgres.operations import (
    RemoveIndexConcurrently as PostgresRemoveIndexConcurrently,
)
from django.db import migrations
from django.db.migrations.operations import AddIndex, RemoveIndex


def drop_pattern_indexes(*tables: str, concurrently: bool = False) -> migrations.RunPython:
    """A migration operation dropping the `varchar_pattern_ops` ("..._like") indexes Django adds
    on PostgreSQL beside every indexed CharField, primary keys and foreign keys to them included.

    They serve only `LIKE 'prefix%'` queries, which nothing runs on these columns (ids are
    looked up whole), yet every insert pays for them: on the tables a payment writes they were a
    third of the index entries (docs/payments.md "Benchmark"). Django drops them itself (with IF
    EXISTS) if such a field is ever altered, and creates them for fields added later.
    """

    def forwards(apps, schema_editor):
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT i.indexrelid::regclass::text FROM pg_index i "
                "JOIN pg_opclass o ON o.oid = ANY(i.indclass) "
                "WHERE i.indrelid = ANY(%s::regclass[]) AND o.opcname = 'varchar_pattern_ops'",
                [list(tables)],
            )
            names = sorted({name for (name,) in cursor.fetchall()})
        how = "CONCURRENTLY " if concurrently else ""  # in a migration with atomic = False
        for name in names:
            schema_editor.execute(f"DROP INDEX {how}IF EXISTS {name}")

    return migrations.RunPython(forwards, migrations.RunPython.noop)


def drop_index_concurrently(name: str, table: str, columns: str) -> migrations.RunPython:
    """DROP INDEX CONCURRENTLY `name` (a plain DROP INDEX waits for, then blocks, every query
    on the table) in a migration with `atomic = False`; backwards, built again on `columns`.
    For an index Django made itself (a foreign key's) that `db_index=False` removes from the
    state: pair it with that AlterField in a SeparateDatabaseAndState."""

    def forwards(apps, schema_editor):
        how = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
        schema_editor.execute(f"DROP INDEX {how}IF EXISTS {name}")

    def backwards(apps, schema_editor):
        how = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
        schema_editor.execute(f"CREATE INDEX {how}IF NOT EXISTS {name} ON {table} ({columns})")

    return migrations.RunPython(forwards, backwards)


class ConcurrentlyOnPostgresql:
    """An index operation CONCURRENTLY on PostgreSQL (its migration must say `atomic =
    False`), and `plain` elsewhere: the embedded SQLite has no such thing and small tables."""

    plain: type

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        return self.plain.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        return self.plain.database_backwards(self, app_label, schema_editor, from_state, to_state)


class AddIndexConcurrently(ConcurrentlyOnPostgresql, PostgresAddIndexConcurrently):
    """CREATE INDEX CONCURRENTLY on PostgreSQL: writers are not blocked while it builds (a
    plain CREATE INDEX locks the table against writes for the whole build)."""

    plain = AddIndex


class RemoveIndexConcurrently(ConcurrentlyOnPostgresql, PostgresRemoveIndexConcurrently):
    """DROP INDEX CONCURRENTLY on PostgreSQL (a plain DROP INDEX waits for, then blocks,
    every query on the table)."""

    plain = RemoveIndex


def on_postgresql(sql: str, reverse_sql: str) -> migrations.RunPython:
    """A migration operation running `sql` (`reverse_sql` backwards) on PostgreSQL only: for
    triggers and functions, which the embedded SQLite does without (docs/api-conventions.md
    "Keys")."""

    def run(text):
        def operation(apps, schema_editor):
            if schema_editor.connection.vendor == "postgresql":
                schema_editor.execute(text, params=None)

        return operation

    return migrations.RunPython(run(sql), run(reverse_sql))
