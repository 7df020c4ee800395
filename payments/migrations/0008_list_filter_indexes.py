from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction (no table lock while it builds).
    atomic = False

    dependencies = [
        ("payments", "0007_back_office_search_indexes"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="payment",
            index=models.Index(
                fields=["merchant", "livemode", "status", "-id"], name="payment_status"
            ),
        ),
        AddIndexConcurrently(
            model_name="payment",
            index=models.Index(
                fields=["merchant", "livemode", "currency", "-id"], name="payment_currency"
            ),
        ),
        AddIndexConcurrently(
            model_name="payment",
            index=models.Index(
                fields=["merchant", "livemode", "method_type", "-id"], name="payment_method"
            ),
        ),
    ]
