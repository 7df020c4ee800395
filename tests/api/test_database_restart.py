"""After PostgreSQL drops its connections (a restart, a failover), the connection pool does not
hand a dead one to a request: the pool checks each as it hands it out, by a poll of its socket
(Django's CONN_HEALTH_CHECKS with the pool, config/postgresql/base.py; docs/dependencies.md).
The drop is pg_terminate_backend on the test database's other connections (the pool's idle
ones), waiting until they are gone, as a restart's are before the server is back."""

import psycopg
import pytest
from django.db import connection

from config.postgresql.base import dropped_by_the_server

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def drop_other_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_after_the_server_drops_its_connections_the_next_requests_are_served(http, settings):
    if "pool" not in settings.DATABASES["default"]["OPTIONS"]:
        pytest.skip("DATABASE_POOL is off: every request opens its own connection")
    assert http.get("/v1/payments").status_code == 200  # the pool holds idle connections now
    assert drop_other_connections() >= 1
    assert [http.get("/v1/payments").status_code for _ in range(3)] == [200] * 3


def test_a_dropped_connection_is_told_from_an_idle_one_without_a_query():
    settings = connection.settings_dict
    other = psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"],
        host=settings["HOST"],
        port=settings["PORT"] or None,
        autocommit=True,
    )
    try:
        other.execute("SELECT 1")  # its answer read: nothing left on the socket
        assert not dropped_by_the_server(other)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [other.info.backend_pid])
        assert dropped_by_the_server(other)
    finally:
        other.close()
    assert dropped_by_the_server(other)
