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

A worker told to stop while it still loads the app never serves: it exits as soon as granian
installs its stop handler (`_stopped_granians_main`; issue 21, a worker answering ready after the
other had closed, and granian waiting for it until the kill timeout).
"""

import logging
import signal
import socket
import threading

log = logging.getLogger(__name__)
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
    signal only (granian 2.8.7; tests/e2e/test_draining.py sends a worker repeated SIGTERMs), and
    exits instead of serving when a stop signal came while the app loaded (SystemExit: status 0,
    as a worker that stopped serving ends)."""
    try:
        from granian import _signals
        from granian._granian import WorkerSignal
    except ImportError:  # another server: nothing to replace
        return

    def set_sync_signals():
        inherited = [signal.getsignal(signum) for signum in STOPPING]
        worker_signal, stopped = WorkerSignal(), threading.Lock()

        def handler(signum, frame):
            DRAINING.set()
            if stopped.acquire(blocking=False):
                worker_signal.set()

        _signals.set_main_signals(handler)
        # Checked after the handler is in place: a stop signal that came before ran the inherited
        # handler (or the watcher marked DRAINING), one since ran this handler, which marks it.
        if DRAINING.is_set() or any(map(_stopped_granians_main, inherited)):
            log.warning("stop signal received while loading the app: exiting without serving")
            raise SystemExit(0)
        return worker_signal

    _signals.set_sync_signals = set_sync_signals


def _stopped_granians_main(handler) -> bool:
    """Whether `handler` is the stop handler of granian's main process and a stop signal ran it.
    granian forks each worker from its main process (multiprocessing's fork on Linux), so a
    worker keeps the main process's handler until it installs its own, after loading the app. A
    SIGTERM that reaches a worker meanwhile (granian's main passes its own on to every worker,
    one still starting too) runs that handler on the worker's copy of the server: it sets
    `interrupt_signal` there and nothing stops the worker, which then serves, answering ready,
    until the kill timeout (granian 2.8.7)."""
    from granian.server.common import AbstractServer

    server = getattr(handler, "__self__", None)
    return isinstance(server, AbstractServer) and server.interrupt_signal
