"""Small database writes that failed because the database was unreachable, retried in the
background until they succeed or no longer matter (docs/request-safety.md: a key released
after a 5xx during a database outage is free soon after the database returns).

One background writer per process (infra/background.py), started by the first write it is
given and ended when none is left. Every DEPENDENCY_RETRY_SECONDS it tries each pending write
once and drops the writes that succeeded or whose deadline passed (a lease that ended on its
own); its database connection goes back between rounds, so an outage costs it none.
"""

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError

from infra.background import BackgroundWriter

log = logging.getLogger("infra.deferred")


class DeferredWrites:
    def __init__(self, name: str):
        self._name = name
        self._pending: dict[object, tuple[Callable[[], object], float]] = {}
        self._lock = threading.Lock()
        self.writer = BackgroundWriter(name, self.retry_once, _retry_interval)

    def add(self, key, write: Callable[[], object], seconds_left: float) -> None:
        """Retry `write` (one idempotent statement) until it succeeds, for `seconds_left`."""
        with self._lock:
            self._pending[key] = (write, time.monotonic() + seconds_left)
        self.writer.wake()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def retry_once(self) -> bool:
        """Tries each pending write once; -> whether any is left."""
        with self._lock:
            pending = list(self._pending.items())
        for key, (write, deadline) in pending:
            if time.monotonic() < deadline and not self._succeeds(write):
                continue
            with self._lock:  # done with, unless a newer write for the key came meanwhile
                if self._pending.get(key, (None,))[0] is write:
                    del self._pending[key]
        return self.pending() > 0

    def _succeeds(self, write: Callable[[], object]) -> bool:
        try:
            write()
        except DatabaseError as exc:
            log.debug("%s: still failing (%s)", self._name, exc)
            return False
        return True


def _retry_interval() -> float:
    return settings.DEPENDENCY_RETRY_SECONDS
