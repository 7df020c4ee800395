from django.db import migrations, models


class Migration(migrations.Migration):
    # Choices only (the `held` status): no SQL (`manage.py sqlmigrate webhooks 0008` is empty).
    dependencies = [
        ("webhooks", "0007_delivery_recoverable_index"),
    ]

    operations = [
        migrations.AlterField(
            model_name='delivery',
            name='status',
            field=models.CharField(choices=[('pending', 'Pending'), ('delivered', 'Delivered'), ('dead_lettered', 'Dead Lettered'), ('canceled', 'Canceled'), ('held', 'Held')], default='pending', max_length=16),
        ),
    ]
