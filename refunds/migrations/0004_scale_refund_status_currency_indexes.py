"""A merchant's refunds of one status, or of one currency, newest first (the back office's
filters): refund_merchant alone walks every refund of a big merchant to find a rare status or
currency (59,960 rows at 1M payments; docs/data.md). Refunds are written rarely, so two more
index entries each cost little."""

from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction (no table lock).
    atomic = False

    dependencies = [("refunds", "0003_scale_refund_merchant_index")]

    operations = [
        AddIndexConcurrently(
            model_name="refund",
            index=models.Index(fields=["merchant", "status", "-id"], name="refund_merchant_status"),
        ),
        AddIndexConcurrently(
            model_name="refund",
            index=models.Index(
                fields=["merchant", "currency", "-id"], name="refund_merchant_currency"
            ),
        ),
    ]
