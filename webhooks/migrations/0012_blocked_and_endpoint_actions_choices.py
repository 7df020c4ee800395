from django.db import migrations, models


class Migration(migrations.Migration):
    # Choices only (the `blocked` delivery status, the paused, resumed and updated actions):
    # no SQL (`manage.py sqlmigrate webhooks 0012` is empty).
    dependencies = [
        ("webhooks", "0011_endpoint_pause_and_ordering"),
    ]

    operations = [
        migrations.AlterField(
            model_name='delivery',
            name='status',
            field=models.CharField(choices=[('pending', 'Pending'), ('delivered', 'Delivered'), ('dead_lettered', 'Dead Lettered'), ('canceled', 'Canceled'), ('held', 'Held'), ('blocked', 'Blocked')], default='pending', max_length=16),
        ),
        migrations.AlterField(
            model_name='statuschange',
            name='action',
            field=models.CharField(choices=[('warned', 'Warned'), ('disabled', 'Disabled'), ('enabled', 'Enabled'), ('recovered', 'Recovered'), ('paused', 'Paused'), ('resumed', 'Resumed'), ('updated', 'Updated')], max_length=16),
        ),
    ]
