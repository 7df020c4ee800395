"""`request_id=` finds the replays that carried that id: a partial index of the replays only."""

from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction (no table lock while it builds).
    atomic = False

    dependencies = [
        ("api", "0007_requestlog_replay_of"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="requestlogentry",
            index=models.Index(
                condition=models.Q(("replay_of__isnull", False)),
                fields=["merchant_id", "livemode", "replay_of"],
                name="requestlog_replay_of",
            ),
        ),
    ]
