"""Webhook delivery benchmark: deliveries per second, and the delay from the commit of an event
to its first delivery attempt (p50, p99), against a local HTTPS receiver.

Runs on PostgreSQL + Redis, as production does: BENCH_DATABASE_URL (a database it may drop and
recreate; default svc_bench_webhooks on the local server) and BENCH_REDIS_URL (default Redis
index 8), with the webhook workers (live and test pools) and beat started as the Procfile
starts them. Two test-mode endpoints of one merchant subscribe to `*`: a healthy receiver (its
own process, answers 200) and a dead one that accepts TCP connections and never answers, so
every attempt to it waits the full 10-second timeout. Phases:

1. paced, healthy endpoint only: events at a steady rate; commit -> first attempt;
2. noisy neighbour (issue 20): "bob" pays in live mode to a healthy endpoint, at the same
   rate; his commit -> first attempt alone (the baseline), then while "alice" commits an
   event for every five of his to 4 endpoints of hers that never answer, in test mode, then
   in live mode (bob's own pool: the per-account cap); each p99 as a ratio to the baseline;
3. paced, healthy + dead endpoint: the same as 1, to show the dead one does not slow the
   healthy one;
4. burst, healthy + dead: events committed while the workers are stopped, then drained;
   healthy deliveries per second, and how many broker messages the backlog had queued.

Usage: .venv/bin/python bench/bench_webhooks.py [--rate 100] [--seconds 10] [--burst 2000]
       [--workers 1] [--noisy-only]
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing import Process
from pathlib import Path

from bench_payments import recreate_database
from https_receiver import CA_FILE, WORK, start_healthy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# As in production: with DEBUG on, Django also keeps every query's SQL and timing. Never the
# developer's own DATABASE_URL: the bench recreates its database.
os.environ.update(
    DEBUG="false",
    DJANGO_SECRET_KEY="bench-secret-key",
    API_KEY_PEPPER="bench-pepper",
    DATABASE_URL=os.environ.get(
        "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/svc_bench_webhooks"
    ),
    REDIS_URL=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/8"),
)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["WEBHOOK_ALLOWED_NETWORKS"] = "127.0.0.0/8"
os.environ["WEBHOOK_CA_BUNDLE"] = str(CA_FILE)


def start_receivers() -> tuple[int, int, Process, socket.socket]:
    healthy_port, healthy = start_healthy()
    dead = socket.socket()  # listens, never accepts: the TLS handshake never gets an answer
    dead.bind(("127.0.0.1", 0))
    dead.listen(1024)
    return healthy_port, dead.getsockname()[1], healthy, dead


CELERY = [sys.executable, "-m", "celery", "-A", "config"]


def start_process(args: list[str]) -> subprocess.Popen:
    """A Celery process logging warnings and errors only (LOG_LEVEL: the service's logging
    config decides the level, not `--loglevel`, config/celery.py)."""
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    return subprocess.Popen(
        CELERY + args, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL
    )


def start_workers(count: int) -> list[subprocess.Popen]:
    """The Procfile's delivery workers (the live and the test pool), `count` times each."""
    processes = []
    for queue in ("webhooks", "webhooks-test"):
        worker = ["worker", "-Q", queue, "--pool", "threads", "--concurrency", "16"]
        worker += ["--prefetch-multiplier", "1", "--without-gossip", "--without-mingle"]
        processes += [start_process(worker + ["-n", f"bench-{queue}-{n}@%h"]) for n in range(count)]
    return processes


def stop(processes: list[subprocess.Popen]) -> None:
    """Warm shutdown: a worker finishes what it is delivering (at most the 10 s timeout)."""
    for process in processes:
        os.killpg(process.pid, signal.SIGTERM)
    for process in processes:
        process.wait(60)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


GIVE_UP = 60  # seconds after a paced phase to wait for its last first attempts


def emit_timed(merchant, committed: dict, livemode: bool = False) -> None:
    from django.db import transaction

    from events.services import emit

    with transaction.atomic():
        holder = {}
        # Registered before emit()'s own hook, so it runs first, right after the COMMIT.
        transaction.on_commit(lambda: committed.__setitem__(holder["id"], time.time()))
        holder["id"] = emit(
            merchant=merchant,
            livemode=livemode,
            type="payment.captured",
            obj={"id": "pay_01J00000000000000000BENCH0", "object": "payment"},
        ).id


def wait_delivered(endpoint, event_ids, timeout: float, *, or_give_up=False) -> None:
    """Until every event has a delivered attempt at the endpoint; past `timeout`, exit, or
    return with `or_give_up` (the phase then reports what was not delivered)."""
    from webhooks.models import Attempt

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = Attempt.objects.filter(
            endpoint=endpoint, event_id__in=event_ids, status="delivered"
        ).count()
        if done >= len(event_ids):
            return
        time.sleep(0.2)
    if not or_give_up:
        raise SystemExit(f"only {done} of {len(event_ids)} delivered in {timeout} s")


def first_attempt_delays(endpoint, committed: dict) -> list[float]:
    from webhooks.models import Attempt

    attempts = Attempt.objects.filter(endpoint=endpoint, event_id__in=committed, attempt=1)
    return [a.attempted_at.timestamp() - committed[a.event_id] for a in attempts]


def paced_phase(
    label, merchant, healthy, rate: int, seconds: int, *, livemode=False, noise=None, baseline=None
) -> float:
    """Events of `merchant` at `rate`; with `noise` (a merchant and a mode), one event of that
    merchant's after every five. -> the healthy endpoint's commit -> first attempt p99."""
    committed: dict = {}
    interval = 1.0 / rate
    start = time.monotonic()
    for n in range(rate * seconds):
        time.sleep(max(0.0, start + n * interval - time.monotonic()))
        emit_timed(merchant, committed, livemode)
        if noise is not None and n % 5 == 0:
            emit_timed(noise[0], {}, noise[1])
    wait_delivered(healthy, list(committed), timeout=GIVE_UP, or_give_up=noise is not None)
    delays = first_attempt_delays(healthy, committed)
    missing = len(committed) - len(delays)
    delays += [float("inf")] * missing  # not attempted GIVE_UP s after the phase
    p50, p99 = (percentile(delays, q) for q in (0.5, 0.99))
    ratio = "" if baseline is None else f"; p99 {p99 / baseline:.1f}x the baseline's"
    print(
        f"{label}: {len(delays)} events at {rate}/s; commit -> first attempt "
        f"p50 {ms(p50)}, p99 {ms(p99)}, max {ms(max(delays))} (healthy endpoint){ratio}"
        + (f"; {missing} not attempted {GIVE_UP} s after the phase" if missing else "")
    )
    return p99


def warm_up(merchant, endpoint, *, livemode: bool) -> None:
    """One event delivered before a phase: the pool's worker is up, its first connection and
    TLS setup are done (a fixed sleep was too short for a worker starting on a loaded box)."""
    committed: dict = {}
    emit_timed(merchant, committed, livemode)
    wait_delivered(endpoint, list(committed), timeout=60)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds != float("inf") else f"> {GIVE_UP} s"


def noisy_neighbour_phases(rate: int, seconds: int, healthy_port: int, dead_port: int) -> None:
    """Bob's live webhooks alone, then while alice's endpoints hang, in test mode and then in
    live mode; alice's endpoints are deleted afterwards (their backlog canceled) and their
    attempts in flight left to time out."""
    from accounts.services import merchant_create
    from webhooks.services import endpoint_create, endpoint_delete

    def endpoint(merchant, port, livemode):
        url = f"https://localhost:{port}/hooks"
        return endpoint_create(merchant=merchant, livemode=livemode, url=url).endpoint

    bob = merchant_create(name="Bob", email="bob@example.test").merchant
    alice = merchant_create(name="Alice", email="alice@example.test").merchant
    bobs = endpoint(bob, healthy_port, True)
    warm_up(bob, bobs, livemode=True)
    baseline = paced_phase(
        "noisy neighbour, bob alone (live)", bob, bobs, rate, seconds, livemode=True
    )
    for livemode in (False, True):
        hers = [endpoint(alice, dead_port, livemode) for _ in range(4)]
        mode = "live" if livemode else "test"
        paced_phase(
            f"noisy neighbour, bob (live) while alice's 4 {mode}-mode endpoints hang",
            bob,
            bobs,
            rate,
            seconds,
            livemode=True,
            noise=(alice, livemode),
            baseline=baseline,
        )
        for dead in hers:
            endpoint_delete(endpoint=dead)
        time.sleep(11)  # alice's attempts in flight time out


def purge_queues() -> None:
    """Nudges an earlier run left in the broker would reach this run's workers."""
    from config.celery import app

    with app.connection_for_write() as conn:
        for queue in ("webhooks", "webhooks-test"):
            conn.default_channel.queue_purge(queue)


def queued_messages() -> int:
    """Messages waiting in the webhooks queues (nudges, and the beat's ticks)."""
    from config.celery import app

    with app.connection_for_write() as conn:
        channel = conn.default_channel
        return sum(channel.queue_declare(q).message_count for q in ("webhooks", "webhooks-test"))


def burst_phase(merchant, healthy, count: int, workers: int) -> list[subprocess.Popen]:
    """Deliveries per second: `count` events committed while no worker runs, then workers
    started on the backlog; timed from the first attempt to the end of the last delivery."""
    from webhooks.models import Attempt

    committed: dict = {}
    for _ in range(count):
        emit_timed(merchant, committed)
    queued = queued_messages()
    processes = start_workers(workers)
    wait_delivered(healthy, list(committed), timeout=600)
    attempts = list(Attempt.objects.filter(endpoint=healthy, event_id__in=committed))
    first = min(a.attempted_at.timestamp() for a in attempts)
    last = max(a.attempted_at.timestamp() + a.duration_ms / 1000 for a in attempts)
    print(
        f"burst: {count} events queued, then {workers} worker process(es) x 16 threads: "
        f"{count / (last - first):.0f} healthy deliveries/s "
        f"({count} in {last - first:.1f} s, the dead endpoint subscribed too); "
        f"{queued} broker messages were queued for the backlog"
    )
    return processes


def vacuum(*models) -> None:
    """Each run starts from tables without the dead rows of earlier runs, as autovacuum keeps
    them in production (a shared bench server may run with it off)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for model in models:
                cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=int, default=100, help="paced events per second")
    parser.add_argument("--seconds", type=int, default=10, help="length of each paced phase")
    parser.add_argument("--burst", type=int, default=2000, help="events in the burst phase")
    parser.add_argument("--workers", type=int, default=1, help="worker processes in the burst")
    parser.add_argument("--noisy-only", action="store_true", help="only the noisy neighbour")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command

    from accounts.services import merchant_create
    from events.models import Event
    from webhooks.models import Attempt, Delivery
    from webhooks.services import endpoint_create, endpoint_delete

    recreate_database(os.environ["DATABASE_URL"])
    call_command("migrate", verbosity=0)
    vacuum(Event, Delivery, Attempt)
    purge_queues()
    healthy_port, dead_port, healthy_server, dead_socket = start_receivers()
    beat = start_process(["beat", "--schedule", str(WORK / "beat")])
    workers = start_workers(1)
    dead = None
    try:
        merchant = merchant_create(name="Bench", email="bench@example.test").merchant

        def endpoint(port):
            url = f"https://localhost:{port}/hooks"
            return endpoint_create(merchant=merchant, livemode=False, url=url).endpoint

        healthy = endpoint(healthy_port)
        warm_up(merchant, healthy, livemode=False)
        if not args.noisy_only:
            paced_phase("paced, healthy only", merchant, healthy, args.rate, args.seconds)
        noisy_neighbour_phases(args.rate, args.seconds, healthy_port, dead_port)
        if args.noisy_only:
            return
        dead = endpoint(dead_port)
        paced_phase("paced, healthy + dead", merchant, healthy, args.rate, args.seconds)
        stop(workers)
        workers = burst_phase(merchant, healthy, args.burst, args.workers)
        print(
            f"dead endpoint: {Attempt.objects.filter(endpoint=dead).count()} attempts "
            "(each waited out the 10 s timeout), "
            f"{Delivery.objects.filter(endpoint=dead, status='pending').count()} "
            "deliveries waiting their turn"
        )
    finally:
        if dead is not None:
            endpoint_delete(endpoint=dead)  # cancels its backlog
        stop(workers + [beat])
        healthy_server.terminate()
        dead_socket.close()


if __name__ == "__main__":
    main()
