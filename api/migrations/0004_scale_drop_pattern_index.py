"""The request-log id's `varchar_pattern_ops` twin, which no query reads (ids are looked up
whole), dropped: an entry less written per request (docs/data.md)."""

from django.db import migrations

from infra.schema import drop_pattern_indexes


class Migration(migrations.Migration):
    atomic = False  # DROP INDEX CONCURRENTLY

    dependencies = [
        ("api", "0003_config_revision"),
    ]

    operations = [drop_pattern_indexes("api_requestlogentry", concurrently=True)]
