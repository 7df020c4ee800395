"""A request thread keeps its database connection for its next request, and after PostgreSQL
drops its connections (a restart, a failover) no dead one reaches a request, kept by a thread
or taken from the pool (DATABASE_POOL): each is checked before a request's first statement,
by a poll of its socket (CONN_HEALTH_CHECKS, config/postgresql/base.py; docs/dependencies.md).
The drop is pg_terminate_backend, waiting until each connection is gone, as a restart's are
before the server is back."""

import psycopg
import pytest
import requests
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from django.test import RequestFactory

from config.postgresql.base import dropped_by_the_server
from tests.e2e.processes import web_server

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def drop_other_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def other_connection() -> psycopg.Connection:
    """A connection of the test's own to the test database, beside Django's."""
    settings = connection.settings_dict
    return psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"],
        host=settings["HOST"],
        port=settings["PORT"] or None,
        autocommit=True,
    )


def served_on_this_thread(secret: str) -> int:
    """`GET /v1/payments` through Django's WSGI handler (what config.wsgi serves) on the test's
    own thread, as a server's thread runs a request: its start and end signals included."""
    environ = RequestFactory().get("/v1/payments", HTTP_AUTHORIZATION=f"Bearer {secret}").environ
    started = []
    response = WSGIHandler()(environ, lambda status, headers, exc_info=None: started.append(status))
    response.close()  # request_finished: what a request's end does to the connection
    return int(started[0].split()[0])


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


@pytest.fixture
def kept(new_merchant, settings) -> str:
    """The merchant's test secret key, with a connection kept by this thread after a request."""
    if "pool" in settings.DATABASES["default"]["OPTIONS"]:
        pytest.skip("DATABASE_POOL is on: each request takes a connection from the pool")
    secret = new_merchant.keys["test"]["secret"].secret
    assert served_on_this_thread(secret) == 200
    return secret


def test_a_thread_keeps_its_connection_from_one_request_to_the_next(kept):
    before = backend_pid()
    assert [served_on_this_thread(kept) for _ in range(2)] == [200, 200]
    assert backend_pid() == before


def test_a_kept_connection_left_in_a_transaction_is_replaced(kept):
    left = backend_pid()
    connection.connection.execute("BEGIN")  # behind Django's back: a transaction left open
    assert served_on_this_thread(kept) == 200
    assert backend_pid() != left


def test_a_kept_connection_the_server_dropped_is_replaced(kept):
    dropped = backend_pid()
    with other_connection() as other:
        other.execute("SELECT pg_terminate_backend(%s, 5000)", [dropped])
    assert served_on_this_thread(kept) == 200
    assert backend_pid() != dropped


@pytest.mark.e2e
@pytest.mark.parametrize("pool", ["false", "true"], ids=["kept", "pooled"])
def test_after_the_server_drops_its_connections_the_next_requests_are_served(new_merchant, pool):
    """The web server as production runs it (granian, 4 threads), its connections kept by its
    threads or pooled: every one dropped at once, and every request after it still 200."""
    secret = new_merchant.keys["test"]["secret"].secret
    with web_server(DATABASE_POOL=pool) as base:

        def listed() -> int:
            headers = {"Authorization": f"Bearer {secret}"}
            return requests.get(f"{base}/v1/payments", headers=headers, timeout=10).status_code

        assert [listed() for _ in range(4)] == [200] * 4  # its connections open, idle now
        assert drop_other_connections() >= 1
        assert [listed() for _ in range(8)] == [200] * 8


def test_a_dropped_connection_is_told_from_an_idle_one_without_a_query():
    other = other_connection()
    try:
        other.execute("SELECT 1")  # its answer read: nothing left on the socket
        assert not dropped_by_the_server(other)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [other.info.backend_pid])
        assert dropped_by_the_server(other)
    finally:
        other.close()
    assert dropped_by_the_server(other)
