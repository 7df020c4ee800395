"""The challenge session's `varchar_pattern_ops` twins (id, payment), which no query reads,
dropped (docs/data.md)."""

from django.db import migrations

from infra.schema import drop_pattern_indexes


class Migration(migrations.Migration):
    atomic = False  # DROP INDEX CONCURRENTLY

    dependencies = [
        ("sandbox", "0001_initial"),
    ]

    operations = [drop_pattern_indexes("sandbox_challengesession", concurrently=True)]
