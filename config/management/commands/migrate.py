"""`manage.py migrate`, one at a time across the fleet (docs/production.md "Upgrading").

Django's migrate takes no lock: several nodes running it at once each apply the same migration
(the second fails on "relation already exists", or both succeed and `django_migrations` records
it twice). On PostgreSQL this one holds a session-level advisory lock for the whole command, so
the others wait, then find everything applied and do nothing. SQLite serialises writers itself.

A waiting node polls (pg_try_advisory_lock every LOCK_POLL_SECONDS) instead of blocking in
pg_advisory_lock: CREATE INDEX CONCURRENTLY (AddIndexConcurrently) waits for every statement
in progress to end, and a statement blocked on the lock would wait for the index in turn, a
deadlock PostgreSQL resolves by cancelling the index build (leaving it INVALID).
"""

import time
import zlib

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connections

# A fixed 32-bit key that names "the schema of this service" in pg_locks.
LOCK_KEY = zlib.crc32(b"svc: manage.py migrate")
LOCK_POLL_SECONDS = 0.5


class Command(DjangoMigrate):
    help = DjangoMigrate.help + " Runs one at a time on PostgreSQL (an advisory lock)."

    def handle(self, *args, **options):
        connection = connections[options["database"]]
        if connection.vendor != "postgresql":
            return super().handle(*args, **options)
        connection.ensure_connection()
        waiting = False
        while not self._locked(connection):
            if not waiting:
                self.stderr.write("Another migrate holds the lock; waiting for it to finish.")
                waiting = True
            time.sleep(LOCK_POLL_SECONDS)
        try:
            return super().handle(*args, **options)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])

    @staticmethod
    def _locked(connection) -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
            return cursor.fetchone()[0]
