"""The one helper for a process's background writer threads (the request log, deferred
writes): a daemon thread that runs rounds of work. Between rounds its database connection is
treated as between two requests (Django's `close_if_unusable_or_obsolete`): a kept one stays,
checked again before the next round uses it, and one from the pool (DATABASE_POOL) goes back,
so the thread never holds a pooled connection while it sleeps. It closes its own at its end.

Started on demand (`wake()`), and again in a forked child, where threads do not survive. A
round returns whether work is left; with none, the thread ends, unless it was woken during
the round: work added then is never stranded. A round that raises is logged and ends the
thread; the next wake() starts a fresh one (at once if one came during that round).
"""

import logging
import os
import threading
import time
from collections.abc import Callable

from django.db import connection

log = logging.getLogger(__name__)


class BackgroundWriter:
    def __init__(self, name: str, work_round: Callable[[], bool], interval: Callable[[], float]):
        """`work_round()` -> whether work is left; `interval()` -> seconds before each round
        (read every time, so settings changed by tests or operators apply)."""
        self.name, self._work_round, self._interval = name, work_round, interval
        self._lock = threading.Lock()
        self._pid: int | None = None  # the process whose thread runs, None: no thread
        self._woken = False

    @property
    def running(self) -> bool:
        with self._lock:
            return self._pid == os.getpid()

    def wake(self) -> None:
        """There is work: the thread runs it at its next round, started if it is not."""
        with self._lock:
            self._woken = True
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name=self.name, daemon=True).start()

    def _run(self) -> None:
        try:
            self._rounds()
        except Exception:  # logged, never lost silently: the next work starts a fresh thread
            log.exception("%s: a round failed; the thread ends", self.name)
            with self._lock:
                self._pid = None
                woken = self._woken
            if woken:  # work added during the failed round must not wait for the next wake
                self.wake()
        finally:
            connection.close()

    def _rounds(self) -> None:
        """Rounds until one finds no work left and no wake() came during it."""
        while True:
            with self._lock:
                self._woken = False
            time.sleep(self._interval())
            try:
                work_left = self._work_round()
            finally:
                connection.close_if_unusable_or_obsolete()
            if not work_left:
                with self._lock:
                    if not self._woken:
                        self._pid = None
                        return
