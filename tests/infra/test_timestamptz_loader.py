"""Timestamps read from PostgreSQL (config.postgresql.base.UtcTimestamptzLoader): psycopg's C
loader on the UTC connections Django makes, giving what Django's own loader gave."""

import datetime

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader

from config.postgresql.base import UtcTimestamptzLoader

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

TEXTS = [
    "2026-11-30 03:16:29.123456+00",
    "2026-01-01 10:00:00+05",  # another offset: the same instant, in UTC
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999999+00",
]


def read(text: str) -> datetime.datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::timestamptz", [text])
        return cursor.fetchone()[0]


def test_the_connection_reads_timestamps_with_psycopgs_c_loader():
    read(TEXTS[0])  # connected
    assert connection.connection.adapters.get_loader(1184, 0) is UtcTimestamptzLoader


@pytest.mark.parametrize("text", TEXTS)
def test_a_timestamp_reads_as_djangos_loader_reads_it(text):
    class DjangosLoader(BaseTzLoader):
        timezone = datetime.UTC

    with connection.cursor() as cursor:
        # The value, and the text PostgreSQL sends for it (what a loader is given).
        cursor.execute("SELECT %s::timestamptz, %s::timestamptz::text", [text, text])
        value, sent = cursor.fetchone()
        expected = DjangosLoader(1184, cursor.cursor).load(sent.encode())

    assert value == expected and value.tzinfo is datetime.UTC
