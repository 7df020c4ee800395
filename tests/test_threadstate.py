"""Django's per-thread state in plain thread-locals (config/threadstate.py): swapped in every
process, still one per thread, and nothing a thread held lost in the swap."""

import threading

import django.urls.base as urls_base
from asgiref.local import Local
from django.core.cache import caches
from django.db import connections
from django.urls import get_script_prefix, set_script_prefix

from config.threadstate import keep_thread_state_in_thread_locals
from tests.support.fresh import printed_by_a_fresh_process


def in_another_thread(work):
    result = []
    thread = threading.Thread(target=lambda: result.append(work()))
    thread.start()
    thread.join()
    return result[0]


def test_a_process_keeps_djangos_thread_state_in_thread_locals():
    """In a fresh process (a test overriding CACHES gets asgiref's Local back from Django's own
    test signal, so this process's state says nothing)."""
    code = (
        "import django, threading; django.setup()\n"
        "import django.urls.base as b; from django.db import connections\n"
        "from django.core.cache import caches\n"
        "held = [connections._connections, caches._connections, b._prefixes, b._urlconfs]\n"
        "print(all(type(local) is threading.local for local in held))"
    )
    assert printed_by_a_fresh_process(code) == "True"


def test_each_thread_still_has_a_connection_a_cache_and_a_prefix_of_its_own():
    set_script_prefix("/here/")
    try:
        theirs = in_another_thread(
            lambda: (connections["default"], caches["default"], get_script_prefix())
        )
        assert theirs[0] is not connections["default"]
        assert theirs[1] is not caches["default"]
        assert theirs[2] == "/"  # Django's default: the prefix set here stays here
    finally:
        set_script_prefix("/")


def test_the_swap_keeps_what_this_thread_already_held(monkeypatch):
    connection, cache = connections["default"], caches["default"]
    for handler, held in ((connections, connection), (caches, cache)):
        local = Local(thread_critical=handler is connections)  # as Django makes them
        local.default = held
        monkeypatch.setattr(handler, "_connections", local)
    prefixes = Local()
    prefixes.value = "/kept/"
    monkeypatch.setattr(urls_base, "_prefixes", prefixes)

    keep_thread_state_in_thread_locals()

    assert connections["default"] is connection and caches["default"] is cache
    assert get_script_prefix() == "/kept/"
    assert type(connections._connections) is threading.local
