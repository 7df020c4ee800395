"""Circuit breakers for the dependencies a request can do without: Redis as the rate limiter's
store, and the broker that carries after-commit nudges (docs/dependencies.md).

A breaker is closed while calls succeed. A connection error or a timeout opens it: for
`DEPENDENCY_RETRY_SECONDS` every call fails at once with `Unavailable`, without touching a
socket, and the caller goes on without the dependency. Then one caller's call goes through as a
trial (the others still fail at once): success closes the breaker, failure opens it again for
another interval. One breaker per server, shared by every thread of the process, so an outage
costs the process one timeout per interval, not one per thread or per request.
"""

import logging
import threading
import time

from django.conf import settings

log = logging.getLogger("infra.breaker")


class Unavailable(Exception):
    """The dependency failed lately: nothing was sent."""


class Breaker:
    def __init__(self, name: str, errors: tuple[type[BaseException], ...]):
        self.name, self.errors = name, errors
        # 0: closed. Otherwise the wall-clock time until which calls fail at once (time.time,
        # which time-machine moves in tests; a clock set back only ends the wait early).
        self._open_until = 0.0
        self._opened_at = 0.0
        self._lock = threading.Lock()

    def call(self, function, *args, **kwargs):
        """function(*args, **kwargs), unless the breaker is open: Unavailable. Errors of
        `errors` open it and are raised."""
        if self._open_until and not self._may_try():
            raise Unavailable(self.name)
        try:
            result = function(*args, **kwargs)
        except self.errors as error:
            self._open(error)
            raise
        if self._open_until:
            self._close()
        return result

    def _may_try(self) -> bool:
        """Open: True for the one caller whose call is the trial, after which the others
        fail at once for another interval whatever its outcome (its failure re-opens it)."""
        with self._lock:
            now = time.time()
            if self._opened_at <= now < self._open_until:
                return False
            self._open_until = now + settings.DEPENDENCY_RETRY_SECONDS
            return True

    def _open(self, error: BaseException) -> None:
        with self._lock:
            was_closed = not self._open_until
            self._opened_at = time.time()
            self._open_until = self._opened_at + settings.DEPENDENCY_RETRY_SECONDS
        if was_closed:  # one warning per outage, not one per request
            log.warning(
                "%s unavailable (%s: %s); going without it, trying again every %s s",
                self.name,
                type(error).__name__,
                error,
                settings.DEPENDENCY_RETRY_SECONDS,
            )

    def _close(self) -> None:
        with self._lock:
            was_open, self._open_until = bool(self._open_until), 0.0
        if was_open:
            log.warning("%s is back", self.name)


_breakers: dict[str, Breaker] = {}
_registry_lock = threading.Lock()


def breaker(name: str, errors: tuple[type[BaseException], ...]) -> Breaker:
    """The process's breaker for the dependency `name` (made on first use)."""
    found = _breakers.get(name)
    if found is None:
        with _registry_lock:
            found = _breakers.setdefault(name, Breaker(name, errors))
    return found


def close_all() -> None:
    """Forgets every outage (tests: each starts with its dependencies presumed up)."""
    for each in list(_breakers.values()):
        each._open_until = 0.0
