"""Draining: what a web worker does when granian passes SIGTERM (or SIGINT) on to it.

granian's worker waits on a threading.Event in its main thread and stops serving from a Python
signal handler, which only the main thread runs. The kernel may deliver the signal to any of
the worker's threads (granian's Rust runtime, the blocking threads); then the handler is only
marked pending, the main thread stays asleep, and the worker keeps serving, and answering
ready, until it is killed (seen in ~1 of 8 SIGTERMs on granian 2.8.7, docs/observability.md
"Draining"). Every signal Python handles is written to the wakeup fd, whichever thread got it:
a thread here reads it, marks the process draining (/readyz answers 503) and sends the signal
on to the main thread, whose sleep it interrupts so granian's handler runs.
"""

import signal
import socket
import threading

DRAINING = threading.Event()
STOPPING = {signal.SIGTERM, signal.SIGINT}


def watch_for_shutdown() -> bool:
    """Install the watcher (main thread only, once per process); False when it cannot."""
    if threading.current_thread() is not threading.main_thread() or _installed:
        return False
    receiver, sender = socket.socketpair()
    sender.setblocking(False)
    try:
        signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False)
    except ValueError:
        return False
    _installed.append((receiver, sender))
    main = threading.main_thread().ident
    threading.Thread(target=_watch, args=(receiver, main), name="drain-watch", daemon=True).start()
    return True


_installed: list = []


def _watch(receiver: socket.socket, main: int) -> None:
    while data := receiver.recv(64):
        if DRAINING.is_set() or not STOPPING & set(data):
            continue
        DRAINING.set()
        signal.pthread_kill(main, data[0] if data[0] in STOPPING else signal.SIGTERM)
