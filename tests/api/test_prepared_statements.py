"""DATABASE_SERVER_SIDE_BINDING (on by default) has PostgreSQL prepare the statements a
connection runs often (docs/configuration.md, docs/payments.md "Benchmark")."""

import pytest
from django.db import connection

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

STATEMENT = "SELECT %s::int + 41"


def prepared_here(text: str) -> int:
    """How many of this connection's prepared statements have `text` (psycopg's $n form)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement = %s", [text])
        return cursor.fetchone()[0]


def test_a_statement_run_often_is_prepared_on_its_connection():
    with connection.cursor() as cursor:
        for _ in range(6):
            cursor.execute(STATEMENT, [1])
            assert cursor.fetchone() == (42,)
    assert prepared_here(STATEMENT.replace("%s", "$1")) == 1


def test_each_execution_is_planned_for_its_own_parameters():
    """plan_cache_mode=force_custom_plan reaches the connection: past the threshold a prepared
    statement is still planned with its parameters, never with a generic plan made without
    them (which walks a big merchant's rows for a small one: docs/data.md "Reads at scale")."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone() == ("force_custom_plan",)
        for _ in range(12):
            cursor.execute(STATEMENT, [1])
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = %s",
            [STATEMENT.replace("%s", "$1")],
        )
        generic, custom = cursor.fetchone()
    assert generic == 0
    assert custom >= 7  # the runs after it was prepared
