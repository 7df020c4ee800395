"""Indexes no query reads, dropped (docs/data.md "Which index each list filter reads"):
payment_customer_email (the back office finds an email through payment_customer_email_ci,
erasure too since 2026-11-25), the token's merchant index (a token is read by its id) and the
operation id's `varchar_pattern_ops` twin. Each was an entry written by every payment."""

from django.db import migrations, models

from infra.schema import RemoveIndexConcurrently, drop_index_concurrently, drop_pattern_indexes


class Migration(migrations.Migration):
    # DROP INDEX CONCURRENTLY runs outside a transaction (no table lock while it waits).
    atomic = False

    dependencies = [
        ("accounts", "0001_initial"),
        ("payments", "0012_erase_customer_permission"),
    ]

    operations = [
        RemoveIndexConcurrently(model_name="payment", name="payment_customer_email"),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="token",
                    name="merchant",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="tokens",
                        to="accounts.merchant",
                    ),
                ),
            ],
            database_operations=[
                drop_index_concurrently(
                    "payments_token_merchant_id_3adbab61", "payments_token", "merchant_id"
                )
            ],
        ),
        drop_pattern_indexes("payments_operation", concurrently=True),
    ]
