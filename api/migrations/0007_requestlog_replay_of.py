"""A replay's entry keeps the X-Request-Id its answer carried (docs/request-log.md "Replays").
Nullable: adding it rewrites nothing; its index is built concurrently by the next migration."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0006_requestlog_injected"),
    ]

    operations = [
        migrations.AddField(
            model_name="requestlogentry",
            name="replay_of",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
    ]
