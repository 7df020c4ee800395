"""A resource's events through an index on `resource_id` alone (resource ids are unique across
merchants and modes), which replaces `event_resource` (merchant, livemode, resource_id); the
resource_version trigger (0007) reads through it alone.

The trigger's read runs on whatever connection inserts the event, on the generic plan
PostgreSQL keeps for it after five custom ones (the connections no longer force custom plans:
infra.keyed, docs/payments.md "Keyed statements"). Written as 0007 wrote it, that plan, made
while `events_event` was small and unanalyzed, read `event_feed` on (merchant, livemode) and
filtered the resource: every event of the merchant on each insert (bench/ab.py at 8 clients:
1.6x PostgreSQL's CPU per create). Now the resource is its only indexable condition (the
merchant, mode and id inside `IS TRUE`, as infra.keyed.by_key writes keyed statements), so no
other index can serve it. The new index is built before the function changes and the old one
dropped after, each concurrently: the read always has an index."""

import importlib

from django.db import migrations, models

from infra.schema import AddIndexConcurrently, RemoveIndexConcurrently, on_postgresql

BEFORE = importlib.import_module("events.migrations.0007_resource_version")

# The latest version of the new event's resource; NEW is the row being inserted
# (tests/infra/test_keyed.py plans it generically).
LATEST = """COALESCE((
    SELECT max(resource_version) FROM events_event AS earlier
    WHERE earlier.resource_id = NEW.resource_id
        AND (earlier.merchant_id = NEW.merchant_id AND earlier.livemode = NEW.livemode
            AND earlier.id <> NEW.id) IS TRUE
), 0) + 1"""

FUNCTION = """CREATE OR REPLACE FUNCTION events_resource_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.resource_version := {latest};
    RETURN NEW;
END $$"""


class Migration(migrations.Migration):
    atomic = False  # CREATE and DROP INDEX CONCURRENTLY run outside a transaction

    dependencies = [("events", "0009_feed_index")]

    operations = [
        AddIndexConcurrently(
            model_name="event",
            index=models.Index(fields=["resource_id"], name="event_resource_id"),
        ),
        on_postgresql(FUNCTION.format(latest=LATEST), FUNCTION.format(latest=BEFORE.LATEST)),
        RemoveIndexConcurrently(
            model_name="event",
            name="event_resource",
        ),
    ]
