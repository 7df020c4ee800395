"""Django's per-thread state (database connections, caches, the URL prefix and urlconf) kept in
plain `threading.local` objects instead of asgiref's `Local` (docs/payments.md "Counted in
instructions").

asgiref's `Local` serves sync and async code alike: on every access it first asks asyncio
whether an event loop runs in the thread (`get_running_loop()`, which raises in a sync thread),
and the non-thread-critical kind (caches, URLs) takes a lock and copies a context variable's
dict on every write. A payment create looks up `connections[...]` ~29 times and sets and
clears the urlconf and prefix once each: 5.7% of its instructions.

Every process here runs Django in sync threads only: granian's WSGI threads, Celery's and the
webhook workers' threads, manage.py. There asgiref's `Local` is a thread-local already, so the
swap changes nothing they can see. The one async view (django-health-check's /readyz, run by
`async_to_sync` in config/probes.py) runs its checks in executor threads, each a sync thread
with state of its own either way, and renders in the request's thread.

Pinned with Django (pyproject.toml): `tests/test_threadstate.py` fails if a Django
upgrade renames what is swapped here.
"""

import threading

import django.urls.base as urls_base
from django.core.cache import caches
from django.db import connections

_URL_STATE = ("_prefixes", "_urlconfs")  # django.urls.base's Locals; each holds `value`


def keep_thread_state_in_thread_locals() -> None:
    """Swaps the Locals for thread-locals, carrying over what this thread already holds."""
    for handler in (connections, caches):
        handler._connections = _carried(handler._connections, list(handler.settings))
    for name in _URL_STATE:
        setattr(urls_base, name, _carried(getattr(urls_base, name), ["value"]))


def _carried(old, names: list[str]) -> threading.local:
    if isinstance(old, threading.local):
        return old
    new = threading.local()
    for name in names:
        if hasattr(old, name):
            setattr(new, name, getattr(old, name))
    return new
