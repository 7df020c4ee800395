"""The load shedder (docs/admission.md "Load shedding").

Each process counts the requests its threads are running. When most of the `WEB_THREADS` are
busy, a `/v1` request that presents no key (or a malformed one) is refused first, then
test-mode ones; live keys are never shed, so the last threads stay theirs. The mode is read
from the key's prefix before any lookup: shedding costs no HMAC and no query.
"""

import threading
from contextlib import contextmanager

from django.conf import settings

from api.errors import RateLimited

LIVE, TEST, ANONYMOUS = "live", "test", "anonymous"


def priority(authorization: str) -> str:
    """What the key presented claims to be, from its prefix alone (checked later)."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token.startswith("svc_"):
        return ANONYMOUS
    return LIVE if token[7:12] == "live_" else TEST


def shed(priority_: str, busy: int) -> bool:
    """With `busy` threads running (this request's included): anonymous requests are shed
    past half of WEB_THREADS, test ones when fewer than API_LIVE_RESERVED_THREADS are left."""
    threads = settings.WEB_THREADS
    if not settings.API_LOAD_SHEDDING or priority_ == LIVE:
        return False
    if priority_ == TEST:  # one thread at least stays open to test mode
        return busy > threads - min(settings.API_LIVE_RESERVED_THREADS, threads - 1)
    return busy > max(1, threads // 2)


_busy_lock = threading.Lock()
_busy = [0]


@contextmanager
def running():
    """Counts this request among the process's running ones for the block; yields how many
    run (this one included)."""
    with _busy_lock:
        _busy[0] += 1
        busy = _busy[0]
    try:
        yield busy
    finally:
        with _busy_lock:
            _busy[0] -= 1


def refuse_when_busy(request, busy: int) -> None:
    """429 for a `/v1` request of a lower priority while `busy` requests run."""
    if request.path.startswith("/v1") and shed(
        priority(request.META.get("HTTP_AUTHORIZATION", "")), busy
    ):
        raise RateLimited(
            "The service is busy; live-mode requests are served first. Retry shortly.",
            headers={"Retry-After": "1"},
        )
