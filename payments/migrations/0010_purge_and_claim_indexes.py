from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction (no table lock while it builds).
    atomic = False

    dependencies = [
        ("payments", "0009_payment_clock_advanced_by"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="token",
            index=models.Index(
                condition=models.Q(("used_at__isnull", True)),
                fields=["expires_at"],
                name="token_unused",
            ),
        ),
        AddIndexConcurrently(
            model_name="operation",
            index=models.Index(
                condition=models.Q(("idempotency_record_id__isnull", False)),
                fields=["idempotency_record_id"],
                name="operation_claim",
            ),
        ),
    ]
