"""A merchant's dead-lettered events (the back office's filter) read event_dead_lettered, a
partial index of the few that are, instead of every event of the merchant (docs/data.md)."""

from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction (no table lock while it builds).
    atomic = False

    dependencies = [
        ("events", "0005_event_type_index"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="event",
            index=models.Index(
                condition=models.Q(("dead_lettered_at__isnull", False)),
                fields=["merchant", "-id"],
                name="event_dead_lettered",
            ),
        ),
    ]
