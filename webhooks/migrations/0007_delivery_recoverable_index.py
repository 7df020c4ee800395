from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction (no lock on deliveries while it
    # builds): recover's bounded read of one endpoint's failed deliveries.
    atomic = False

    dependencies = [
        ("webhooks", "0006_endpoint_health"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="delivery",
            index=models.Index(
                condition=models.Q(("status__in", ["pending", "dead_lettered", "held"])),
                fields=["endpoint", "event"],
                name="delivery_recoverable",
            ),
        ),
    ]
