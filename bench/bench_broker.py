"""Broker latency: time from `apply_async` in one process to the task starting in a Celery
worker process, and the idle worker's CPU (a polling broker costs CPU all day long on a
developer's laptop), on the embedded broker (config/broker.py), on kombu's SQLAlchemy
transport over a SQLite file (the alternative considered for it; only when SQLAlchemy is
installed, it is not a dependency) and (when reachable) on Redis.

Usage: [BENCH_REDIS_URL=redis://...] .venv/bin/python bench/bench_broker.py [--tasks N]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from celery import Celery

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "true")

import config.broker  # noqa: E402, F401  (registers the embedded:// transport)

IDLE_SECONDS = 30


def record_latency(sent_at: float, results_path: str) -> None:
    with open(results_path, "a") as results:
        results.write(f"{time.time() - sent_at}\n")


def make_app(broker_url: str, transport_options: dict) -> Celery:
    """A fresh app per broker: an app keeps its first broker's producer pool."""
    app = Celery("bench_broker")
    app.conf.update(
        broker_url=broker_url,
        broker_transport_options=transport_options,
        task_ignore_result=True,
        worker_prefetch_multiplier=1,
        task_acks_late=True,
    )
    app.task(name="bench.record_latency")(record_latency)
    return app


def broker_settings(name: str) -> tuple[str, dict]:
    """The same broker configuration config/settings/broker.py gives the service."""
    if name == "redis":
        return redis_url(), {}
    from django.conf import settings

    folder = tempfile.mkdtemp(prefix="bench-broker-")
    if name == "sqlalchemy":
        register_sqlalchemy_transport(polling_interval())
        return f"benchsqla+sqlite:///{folder}/broker.sqlite3", {}
    options = dict(settings.CELERY_BROKER_TRANSPORT_OPTIONS)
    options.update(
        data_folder_in=folder,
        data_folder_out=folder,
        control_folder=os.path.join(folder, "control"),
    )
    for made in config.broker.folders(options):
        os.makedirs(made, exist_ok=True)
    return settings.CELERY_BROKER_URL, options


def polling_interval() -> float:
    from django.conf import settings

    return settings.CELERY_BROKER_TRANSPORT_OPTIONS["polling_interval"]


def register_sqlalchemy_transport(polling_interval: float) -> None:
    """kombu's SQLAlchemy transport at the embedded broker's polling interval (its transport
    options all go to create_engine, so the interval is set on a subclass)."""
    from kombu.transport import TRANSPORT_ALIASES
    from kombu.transport.sqlalchemy import Transport

    TRANSPORT_ALIASES["benchsqla"] = lambda: type(
        "SqlaTransport", (Transport,), {"polling_interval": polling_interval}
    )


def run_worker() -> None:
    make_app(*broker_settings_from_env()).worker_main(
        [
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )


def broker_settings_from_env() -> tuple[str, dict]:
    import json

    if os.environ["BENCH_BROKER_URL"].startswith("benchsqla+"):
        register_sqlalchemy_transport(float(os.environ["BENCH_POLLING_INTERVAL"]))
    return os.environ["BENCH_BROKER_URL"], json.loads(os.environ["BENCH_BROKER_OPTIONS"])


def measure(name: str, tasks: int) -> tuple[list[float], float]:
    """-> (latencies in s, the idle worker's CPU share over IDLE_SECONDS)"""
    import json

    broker_url, options = broker_settings(name)
    task = make_app(broker_url, options).tasks["bench.record_latency"]
    results = Path(tempfile.mkstemp(prefix="bench-latency-")[1])
    env = {
        **os.environ,
        "BENCH_BROKER_URL": broker_url,
        "BENCH_BROKER_OPTIONS": json.dumps(options),
        "BENCH_POLLING_INTERVAL": str(polling_interval()),
    }
    worker = subprocess.Popen([sys.executable, __file__, "--worker"], env=env)
    try:
        task.delay(time.time(), str(results))  # warm-up: waits for the worker
        wait_for_lines(results, 1, timeout=60)
        results.write_text("")
        for _ in range(tasks):
            task.delay(time.time(), str(results))
            time.sleep(0.02)  # spaced sends: latency, not queueing behind a backlog
        wait_for_lines(results, tasks, timeout=120)
        latencies = [float(line) for line in results.read_text().split()]
        cpu_before = cpu_seconds(worker.pid)
        time.sleep(IDLE_SECONDS)
        return latencies, (cpu_seconds(worker.pid) - cpu_before) / IDLE_SECONDS
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_lines(path: Path, count: int, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if len(path.read_text().split()) >= count:
            return
        time.sleep(0.05)
    got = len(path.read_text().split())
    raise SystemExit(f"timed out: {got} of {count} task runs arrived in {path}")


def redis_url() -> str:
    """BENCH_REDIS_URL: the Redis to compare with (REDIS_URL would switch Django's settings
    to Redis, and the embedded broker's settings are the ones measured)."""
    return os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")


def redis_reachable() -> bool:
    import redis

    try:
        redis.Redis.from_url(redis_url(), socket_connect_timeout=1).ping()
    except redis.RedisError:
        return False
    return True


def report(name: str, latencies: list[float], idle_cpu: float) -> None:
    ms = sorted(value * 1000 for value in latencies)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(
        f"{name:10} tasks={len(ms):4}  p50={statistics.median(ms):7.1f} ms  "
        f"p99={p99:7.1f} ms  max={ms[-1]:7.1f} ms  idle worker CPU {idle_cpu:6.1%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker()
        return
    import django

    django.setup()
    print("enqueue -> task start latency (one worker process, solo pool)")
    for name in ("embedded", "sqlalchemy", "redis"):
        if name == "redis" and not redis_reachable():
            print("redis      not reachable: skipped")
            continue
        if name == "sqlalchemy" and not sqlalchemy_installed():
            print("sqlalchemy not installed: skipped")
            continue
        report(name, *measure(name, args.tasks))


def sqlalchemy_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("sqlalchemy") is not None


if __name__ == "__main__":
    main()
