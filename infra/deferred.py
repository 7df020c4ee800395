"""Small database writes that failed because the database was unreachable, retried in the
background until they succeed or no longer matter (docs/request-safety.md: a key released
after a 5xx during a database outage is free soon after the database returns).

One daemon thread per process, started by the first write it is given and ended when none is
left. Every DEPENDENCY_RETRY_SECONDS it tries each pending write once, drops the writes that
succeeded or whose deadline passed (a lease that ended on its own), and hands its database
connection back between rounds, so an outage costs it no pooled connection.
"""

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, connection

log = logging.getLogger("infra.deferred")


class DeferredWrites:
    def __init__(self, name: str):
        self._name = name
        self._pending: dict[object, tuple[Callable[[], object], float]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, key, write: Callable[[], object], seconds_left: float) -> None:
        """Retry `write` (one idempotent statement) until it succeeds, for `seconds_left`."""
        with self._lock:
            self._pending[key] = (write, time.monotonic() + seconds_left)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def _run(self) -> None:
        while True:
            time.sleep(settings.DEPENDENCY_RETRY_SECONDS)
            self.retry_once()
            with self._lock:
                if not self._pending:
                    self._thread = None
                    return

    def retry_once(self) -> None:
        with self._lock:
            pending = list(self._pending.items())
        try:
            for key, (write, deadline) in pending:
                if time.monotonic() < deadline and not self._succeeds(write):
                    continue
                with self._lock:  # done with, unless a newer write for the key came meanwhile
                    if self._pending.get(key, (None,))[0] is write:
                        del self._pending[key]
        finally:
            connection.close()

    def _succeeds(self, write: Callable[[], object]) -> bool:
        try:
            write()
        except DatabaseError as exc:
            log.debug("%s: still failing (%s)", self._name, exc)
            return False
        return True
