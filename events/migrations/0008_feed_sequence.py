"""Every event gets its place in the feed (docs/events.md "The feed"), set by the database as
the row is inserted, whatever inserts it (a service, a factory, SQL by hand).

PostgreSQL: a BEFORE INSERT trigger writes the inserting transaction's id (pg_current_xact_id(),
an xid8: 64 bits, never wraps) and the next value of a sequence; no lock is taken. The feed
reads only events whose transaction id is below the oldest transaction still running
(pg_snapshot_xmin), so whatever it returns can never be joined later by an event ordered
before it. The embedded SQLite has one writer at a time: the transaction id is 0 and the
sequence the merchant's largest plus one.

Events written before this migration are ordered by id, before every later one (transaction 0).
Both columns default to 0 (`db_default`): an insert leaves them to the trigger. The feed's
index is built concurrently by the next migration.
"""

import importlib

from django.db import migrations, models

# SQLite remakes the table to add a column with a database default, and a remade table has
# lost its triggers: 0007's resource_version trigger is made again after the columns.
RESOURCE_VERSION = importlib.import_module("events.migrations.0007_resource_version")

POSTGRESQL_FORWARDS = """
CREATE SEQUENCE events_event_feed_sequence;
SELECT setval('events_event_feed_sequence', COALESCE(MAX(sequence), 0) + 1, false)
    FROM events_event;
CREATE FUNCTION events_event_feed_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.transaction_id := pg_current_xact_id()::text::bigint;
    NEW.sequence := nextval('events_event_feed_sequence');
    RETURN NEW;
END $$;
CREATE TRIGGER events_event_feed_order BEFORE INSERT ON events_event
    FOR EACH ROW EXECUTE FUNCTION events_event_feed_order();
"""
POSTGRESQL_BACKWARDS = """
DROP FUNCTION events_event_feed_order() CASCADE;
DROP SEQUENCE events_event_feed_sequence;
"""
SQLITE_FORWARDS = """
CREATE TRIGGER events_event_feed_order AFTER INSERT ON events_event FOR EACH ROW
BEGIN
    UPDATE events_event SET transaction_id = 0, sequence = (
        SELECT MAX(sequence) + 1 FROM events_event
        WHERE merchant_id = NEW.merchant_id AND livemode = NEW.livemode
    ) WHERE id = NEW.id;
END
"""
SQLITE_BACKWARDS = "DROP TRIGGER events_event_feed_order"
ORDER_EXISTING = """
UPDATE events_event SET transaction_id = 0, sequence = ordered.n FROM (
    SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n FROM events_event
) AS ordered WHERE events_event.id = ordered.id
"""


def by_vendor(postgresql: str, sqlite: str):
    def operation(apps, schema_editor):
        sql = postgresql if schema_editor.connection.vendor == "postgresql" else sqlite
        schema_editor.execute(sql, params=None)

    return operation


def order_existing(apps, schema_editor):
    schema_editor.execute(ORDER_EXISTING, params=None)


def resource_version_kept(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS resource_version")
        for statement in RESOURCE_VERSION.TRIGGER["sqlite"]:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0007_resource_version"),
    ]

    operations = [
        migrations.AddField(
            model_name="event",
            name="transaction_id",
            field=models.BigIntegerField(db_default=0, editable=False),
        ),
        migrations.AddField(
            model_name="event",
            name="sequence",
            field=models.BigIntegerField(db_default=0, editable=False),
        ),
        migrations.RunPython(resource_version_kept, migrations.RunPython.noop),
        migrations.RunPython(order_existing, migrations.RunPython.noop),
        migrations.RunPython(
            by_vendor(POSTGRESQL_FORWARDS, SQLITE_FORWARDS),
            by_vendor(POSTGRESQL_BACKWARDS, SQLITE_BACKWARDS),
        ),
    ]
