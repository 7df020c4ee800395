"""After PostgreSQL drops its connections (a restart, a failover), the connection pool does not
hand a dead one to a request: psycopg_pool checks each as it hands it out (Django's
CONN_HEALTH_CHECKS with the pool; docs/dependencies.md). The drop is pg_terminate_backend on
the test database's other connections: the pool's idle ones."""

import pytest
from django.db import connection

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def drop_other_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_after_the_server_drops_its_connections_the_next_requests_are_served(http, settings):
    if "pool" not in settings.DATABASES["default"]["OPTIONS"]:
        pytest.skip("DATABASE_POOL is off: every request opens its own connection")
    assert http.get("/v1/payments").status_code == 200  # the pool holds idle connections now
    assert drop_other_connections() >= 1
    assert [http.get("/v1/payments").status_code for _ in range(3)] == [200] * 3
