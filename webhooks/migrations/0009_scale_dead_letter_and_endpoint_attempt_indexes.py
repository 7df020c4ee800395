"""Dead letters (the admin's list and count, requeue_dead_letters) read delivery_dead_letter,
a partial index of the few deliveries that are, not every delivery; an endpoint's latest
attempts (its health on the admin's page) read attempt_endpoint_recent, and an endpoint's or a
merchant's deliveries (the admin's list) delivery_endpoint_list, instead of sorting all of
them (docs/data.md)."""

from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction (no table lock while it builds).
    atomic = False

    dependencies = [
        ("webhooks", "0008_delivery_held_status"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="delivery",
            index=models.Index(
                condition=models.Q(("status", "dead_lettered")),
                fields=["event", "endpoint"],
                name="delivery_dead_letter",
            ),
        ),
        AddIndexConcurrently(
            model_name="delivery",
            index=models.Index(fields=["endpoint", "-id"], name="delivery_endpoint_list"),
        ),
        AddIndexConcurrently(
            model_name="attempt",
            index=models.Index(fields=["endpoint", "-attempted_at"], name="attempt_endpoint_recent"),
        ),
    ]
