"""`GET /v1/request-logs?status=4xx` (or 5xx, or 402) reads requestlog_errors, a partial index
of the failed requests, instead of walking the month of entries for a few (docs/data.md)."""

from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction (no table lock while it builds).
    atomic = False

    dependencies = [
        ("api", "0004_scale_drop_pattern_index"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="requestlogentry",
            index=models.Index(
                condition=models.Q(("status__gte", 400)),
                fields=["merchant_id", "livemode", "-id"],
                name="requestlog_errors",
            ),
        ),
    ]
