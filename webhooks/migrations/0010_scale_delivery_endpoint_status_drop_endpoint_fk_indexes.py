"""A merchant's or an endpoint's deliveries of one status (the admin's status filter) read
delivery_endpoint_status (endpoint, status, id desc), newest first, instead of every delivery
of the endpoint or of all of them. The endpoint foreign keys' own indexes on deliveries and
attempts are dropped: delivery_endpoint_list and attempt_endpoint_recent lead with the same
column and serve every query and key check they served (docs/data.md "Reads at scale")."""

from django.db import migrations, models

from infra.schema import AddIndexConcurrently, drop_index_concurrently


def endpoint_key(related_name: str) -> models.ForeignKey:
    return models.ForeignKey(
        db_index=False,
        on_delete=models.deletion.PROTECT,
        related_name=related_name,
        to="webhooks.webhookendpoint",
    )


class Migration(migrations.Migration):
    # CREATE / DROP INDEX CONCURRENTLY run outside a transaction (no table lock).
    atomic = False

    dependencies = [
        ("webhooks", "0009_scale_dead_letter_and_endpoint_attempt_indexes"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="delivery",
            index=models.Index(
                fields=["endpoint", "status", "-id"], name="delivery_endpoint_status"
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="delivery", name="endpoint", field=endpoint_key("deliveries")
                ),
                migrations.AlterField(
                    model_name="attempt", name="endpoint", field=endpoint_key("attempts")
                ),
            ],
            database_operations=[
                drop_index_concurrently(
                    "webhooks_delivery_endpoint_id_6cbee67d", "webhooks_delivery", "endpoint_id"
                ),
                drop_index_concurrently(
                    "webhooks_attempt_endpoint_id_736e1fec", "webhooks_attempt", "endpoint_id"
                ),
            ],
        ),
    ]
