"""Endpoints paused and ordered (docs/webhooks.md "Ordering", "Changing an endpoint"):
expand-only, the previous release running on it (`ordered_delivery` has a database default
for its INSERTs; the index built CONCURRENTLY, so outside a transaction)."""

from django.db import migrations, models

from infra.schema import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('events', '0007_resource_version'),
        ('webhooks', '0010_scale_delivery_endpoint_status_drop_endpoint_fk_indexes'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='webhookendpoint',
            options={'permissions': [('enable_webhookendpoint', 'Can re-enable webhook endpoints'), ('recover_webhookendpoint', "Can recover webhook endpoints' failed events"), ('pause_webhookendpoint', 'Can pause and resume webhook endpoints')]},
        ),
        migrations.AddField(
            model_name='webhookendpoint',
            name='ordered_delivery',
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name='webhookendpoint',
            name='paused_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        AddIndexConcurrently(
            model_name='delivery',
            index=models.Index(condition=models.Q(('status', 'blocked')), fields=['endpoint'], name='delivery_blocked'),
        ),
    ]
