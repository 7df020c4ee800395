import django.db.models.fields.json
import django.db.models.functions.text
from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction. The exact-email index
    # (payment_customer_email) stays: the previous release still searches by it while this one
    # rolls out; dropping it is a contract step for a later release.
    atomic = False

    dependencies = [
        ('payments', '0010_purge_and_claim_indexes'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='payment',
            index=models.Index(django.db.models.functions.text.Lower(django.db.models.fields.json.KeyTextTransform('email', 'customer_details')), name='payment_customer_email_ci'),
        ),
    ]
