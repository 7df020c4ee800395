"""Event.resource_version (docs/webhooks.md "Ordering"): set by a trigger as each event is
inserted, the resource's latest number plus one, so writing an event needs no read before it
and no parameter for it (a payment's create is one statement near psycopg's cached-statement
limit: docs/payments.md "Benchmark"). A row trigger sees the rows its statement inserted
before (PostgreSQL: a BEFORE trigger's queries see them; SQLite: an AFTER trigger
renumbers the new row), so events of one INSERT get consecutive numbers in order; it reads
through `event_resource` (merchant, livemode, resource_id). Events written before are
numbered in id order (ids are time-ordered). Expand-only: the column has a database default,
and the previous release's INSERTs are numbered by the trigger too."""

from django.db import migrations, models

LATEST = """COALESCE((
    SELECT max(resource_version) FROM events_event AS earlier
    WHERE earlier.merchant_id = NEW.merchant_id AND earlier.livemode = NEW.livemode
        AND earlier.resource_id = NEW.resource_id AND earlier.id <> NEW.id
), 0) + 1"""

TRIGGER = {
    "postgresql": [
        f"""CREATE FUNCTION events_resource_version() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.resource_version := {LATEST};
            RETURN NEW;
        END $$""",
        """CREATE TRIGGER resource_version BEFORE INSERT ON events_event
            FOR EACH ROW EXECUTE FUNCTION events_resource_version()""",
    ],
    "sqlite": [
        f"""CREATE TRIGGER resource_version AFTER INSERT ON events_event
        BEGIN
            UPDATE events_event SET resource_version = {LATEST} WHERE id = NEW.id;
        END""",
    ],
}
DROP = {
    "postgresql": [
        "DROP TRIGGER resource_version ON events_event",
        "DROP FUNCTION events_resource_version()",
    ],
    "sqlite": ["DROP TRIGGER resource_version"],
}
BACKFILL = """
UPDATE events_event SET resource_version = (
    SELECT count(*) FROM events_event AS earlier
    WHERE earlier.merchant_id = events_event.merchant_id
        AND earlier.livemode = events_event.livemode
        AND earlier.resource_id = events_event.resource_id
        AND earlier.id <= events_event.id
)
"""


def create_trigger(apps, schema_editor):
    schema_editor.execute(BACKFILL)
    for statement in TRIGGER[schema_editor.connection.vendor]:
        schema_editor.execute(statement)


def drop_trigger(apps, schema_editor):
    for statement in DROP[schema_editor.connection.vendor]:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_config_revision_triggers"),
        ("events", "0006_scale_event_dead_lettered_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="event",
            name="resource_version",
            field=models.PositiveIntegerField(db_default=1),
        ),
        migrations.RunPython(create_trigger, drop_trigger),
    ]
