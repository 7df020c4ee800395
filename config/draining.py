"""Draining: what a web worker does when granian passes SIGTERM (or SIGINT) on to it.

granian's worker waits on a threading.Event in its main thread and stops serving from a Python
signal handler, which only the main thread runs. The kernel may deliver the signal to any of
the worker's threads (granian's Rust runtime, the blocking threads); then the handler is only
marked pending, the main thread stays asleep, and the worker keeps serving, and answering
ready, until it is killed (seen in ~1 of 8 SIGTERMs on granian 2.8.7, docs/observability.md
"Draining"). Every signal Python handles is written to the wakeup fd, whichever thread got it:
a thread here reads it, marks the process draining (/readyz answers 503) and sends the signal
on to the main thread, whose sleep it interrupts so granian's handler runs.

granian's handler must run only once per worker: it calls `WorkerSignal.set()`, which sends on a
channel of one slot that granian reads once, so a third call blocks for ever, holding the GIL;
the worker then freezes with its requests in flight unanswered (reproduced: three SIGTERMs to a
worker serving a 4-second request, as systemd's default KillMode=control-group plus granian's
own forwarding plus the pass-on above send; gdb showed the main thread in `set()` inside the
signal handler). So the worker's stop handler is replaced by one that sets it once
(`_stop_handler_once`), before granian installs it.
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
    _stop_handler_once()
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


def _stop_handler_once() -> None:
    """granian's WSGI worker takes its stop handler from `granian._signals.set_sync_signals`
    when it starts serving, after loading the app (this module): replaced here by the same
    handler, which marks the process draining and sets the worker's signal on the first stop
    signal only (granian 2.8.7; tests/e2e/test_draining.py sends a worker repeated SIGTERMs)."""
    try:
        from granian import _signals
        from granian._granian import WorkerSignal
    except ImportError:  # another server: nothing to replace
        return

    def set_sync_signals():
        worker_signal, stopped = WorkerSignal(), threading.Lock()

        def handler(signum, frame):
            DRAINING.set()
            if stopped.acquire(blocking=False):
                worker_signal.set()

        _signals.set_main_signals(handler)
        return worker_signal

    _signals.set_sync_signals = set_sync_signals
