"""DATABASE_SERVER_SIDE_BINDING (on by default) has PostgreSQL prepare the statements a
connection runs often (README "Configuration", docs/payments.md "Benchmark")."""

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
