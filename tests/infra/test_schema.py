"""The indexes on the tables every payment writes (infra.schema, docs/payments.md "Benchmark")."""

from importlib import import_module

import pytest
from django.db import connection

from infra.schema import AddIndexConcurrently

HOT_TABLES = [
    "payments_payment",
    "payments_token",
    "events_event",
    "webhooks_delivery",
    "webhooks_attempt",
]


def indexes_of(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        return dict(cursor.fetchall())


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("table", HOT_TABLES)
def test_no_pattern_indexes_on_the_tables_a_payment_writes(table):
    definitions = indexes_of(table)
    assert definitions, table
    assert not [d for d in definitions.values() if "varchar_pattern_ops" in d]


@pytest.mark.postgres
@pytest.mark.django_db
def test_foreign_keys_covered_by_a_composite_index_have_none_of_their_own():
    """Each of these columns leads a composite index, which serves its lookups."""
    for table, column in [
        ("payments_payment", "merchant_id"),
        ("events_event", "merchant_id"),
        ("webhooks_delivery", "event_id"),
        ("webhooks_attempt", "delivery_id"),
    ]:
        leading = [d for d in indexes_of(table).values() if f"({column}" in d]
        assert leading, (table, column)
        assert not [d for d in leading if f"({column})" in d], (table, column, leading)


@pytest.mark.parametrize(
    "app, migration, indexes",
    [
        (
            "payments",
            "0008_list_filter_indexes",
            ["payment_status", "payment_currency", "payment_method"],
        ),
        ("events", "0005_event_type_index", ["event_type"]),
    ],
)
def test_indexes_on_live_tables_are_built_without_locking_writers(app, migration, indexes):
    """docs/data.md "Reads at scale": CREATE INDEX CONCURRENTLY, outside a transaction."""
    loaded = import_module(f"{app}.migrations.{migration}").Migration
    assert loaded.atomic is False
    assert all(isinstance(operation, AddIndexConcurrently) for operation in loaded.operations)
    assert [operation.index.name for operation in loaded.operations] == indexes
