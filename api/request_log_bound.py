"""What a publishable key's refused requests may cost its merchant's request log
(docs/request-log.md "Refused publishable-key requests").

A publishable key is public: anyone holding one could fill the merchant's log with refusals
(a live one's 403s) and bury its real entries for 30 days. So each process keeps, per merchant
and mode, the first REQUEST_LOG_REFUSED_PUBLISHABLE_PER_MINUTE refused (4xx, 5xx) requests
made with a publishable key in each minute, and counts the rest; the last kept entry of that
minute carries the count (`omitted_after`), written by the log's writer thread. Successes and
secret keys' requests are always kept.
"""

import threading
import time

from django.conf import settings


class _Minute:
    __slots__ = ("minute", "kept", "omitted", "written", "last_kept")

    def __init__(self, minute: int):
        self.minute, self.kept, self.omitted, self.written, self.last_kept = minute, 0, 0, 0, None


class RefusedPublishableBound:
    def __init__(self):
        self._minutes: dict[tuple, _Minute] = {}  # (merchant, livemode) -> the current minute
        self._unwritten: list[tuple[str, int]] = []  # counts of minutes already over
        self._lock = threading.Lock()

    def keeps(self, entry: dict) -> bool:
        """Whether this refused publishable-key entry is kept; counted as left out if not."""
        minute = int(time.time() // 60)
        scope = (entry["merchant_id"], entry["livemode"])
        with self._lock:
            current = self._minutes.get(scope)
            if current is None or current.minute != minute:
                if current is not None and current.omitted > current.written:
                    self._unwritten.append((current.last_kept, current.omitted))
                current = self._minutes[scope] = _Minute(minute)
            if current.kept < settings.REQUEST_LOG_REFUSED_PUBLISHABLE_PER_MINUTE:
                current.kept += 1
                current.last_kept = entry["id"]
                return True
            current.omitted += 1
            return False

    def counts_to_write(self) -> list[tuple[str | None, int]]:
        """(the last kept entry's id, how many were left out after it) for every minute whose
        count changed since asked last; minutes over and written are forgotten."""
        minute = int(time.time() // 60)
        with self._lock:
            counts, self._unwritten = self._unwritten, []
            for scope, current in list(self._minutes.items()):
                if current.omitted > current.written:
                    counts.append((current.last_kept, current.omitted))
                    current.written = current.omitted
                if current.minute != minute:
                    del self._minutes[scope]
        return counts

    def clear(self) -> None:
        with self._lock:
            self._minutes.clear()
            self._unwritten.clear()
