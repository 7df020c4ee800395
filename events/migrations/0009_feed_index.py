"""The feed's read (events/feed.py): a merchant's events of one mode in commit order."""

from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction (no table lock while it builds).
    atomic = False

    dependencies = [
        ("events", "0008_feed_sequence"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="event",
            index=models.Index(
                fields=["merchant", "livemode", "transaction_id", "sequence"], name="event_feed"
            ),
        ),
    ]
