"""The resource_version trigger (0007) plans its read for each event's own merchant, mode and
resource, whatever the inserting connection's plan_cache_mode. The connections used to force
custom plans for everything; since the keyed statements run on generic plans (infra.keyed,
docs/payments.md "Keyed statements") they no longer do, and a generic plan of the trigger's
`max(resource_version)` read, made while `events_event` was small and unanalyzed, walked every
event of the merchant on each insert (bench/ab.py at 8 clients: 1.6x PostgreSQL's CPU per
create, perf's top frame heap_hot_search_buffer under this trigger)."""

from django.db import migrations

from infra.schema import on_postgresql


class Migration(migrations.Migration):
    dependencies = [("events", "0009_feed_index")]

    operations = [
        on_postgresql(
            "ALTER FUNCTION events_resource_version() SET plan_cache_mode = force_custom_plan",
            "ALTER FUNCTION events_resource_version() RESET plan_cache_mode",
        )
    ]
