from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0008_requestlog_replay_of_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="requestlogentry",
            name="omitted_after",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
