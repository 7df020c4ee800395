"""The back office's list of a merchant's refunds (newest first, filtered by status, currency
or mode) reads refund_merchant (merchant, id desc), which replaces the merchant foreign key's
own index (same leading column: the key's checks use it too); the `varchar_pattern_ops` twins
of the ids, which no query reads, are dropped (docs/data.md)."""

from django.db import migrations, models

from infra.schema import AddIndexConcurrently, drop_index_concurrently, drop_pattern_indexes


class Migration(migrations.Migration):
    # CREATE / DROP INDEX CONCURRENTLY run outside a transaction (no table lock).
    atomic = False

    dependencies = [
        ("accounts", "0001_initial"),
        ("refunds", "0002_back_office_groups"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="refund",
            index=models.Index(fields=["merchant", "-id"], name="refund_merchant"),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="refund",
                    name="merchant",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="refunds",
                        to="accounts.merchant",
                    ),
                ),
            ],
            database_operations=[
                drop_index_concurrently(
                    "refunds_refund_merchant_id_bc44f600", "refunds_refund", "merchant_id"
                )
            ],
        ),
        drop_pattern_indexes("refunds_refund", concurrently=True),
    ]
