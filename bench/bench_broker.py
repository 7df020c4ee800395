"""Broker latency: time from `apply_async` in one process to the task starting in a Celery
worker process, on the embedded filesystem broker and (when reachable) on Redis.

Usage: .venv/bin/python bench/bench_broker.py [--tasks N]
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
    """The same broker configuration config/settings.py gives the service."""
    if name == "redis":
        return os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14"), {}
    from django.conf import settings

    folder = tempfile.mkdtemp(prefix="bench-broker-")
    options = dict(settings.CELERY_BROKER_TRANSPORT_OPTIONS)
    options.update(
        data_folder_in=folder,
        data_folder_out=folder,
        control_folder=os.path.join(folder, "control"),
    )
    os.makedirs(options["control_folder"], exist_ok=True)
    return "filesystem://", options


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

    return os.environ["BENCH_BROKER_URL"], json.loads(os.environ["BENCH_BROKER_OPTIONS"])


def measure(name: str, tasks: int) -> list[float]:
    import json

    broker_url, options = broker_settings(name)
    task = make_app(broker_url, options).tasks["bench.record_latency"]
    results = Path(tempfile.mkstemp(prefix="bench-latency-")[1])
    env = {
        **os.environ,
        "BENCH_BROKER_URL": broker_url,
        "BENCH_BROKER_OPTIONS": json.dumps(options),
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
        return [float(line) for line in results.read_text().split()]
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def wait_for_lines(path: Path, count: int, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if len(path.read_text().split()) >= count:
            return
        time.sleep(0.05)
    got = len(path.read_text().split())
    raise SystemExit(f"timed out: {got} of {count} task runs arrived in {path}")


def redis_reachable() -> bool:
    import redis

    try:
        redis.Redis.from_url(
            os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14"), socket_connect_timeout=1
        ).ping()
    except redis.RedisError:
        return False
    return True


def report(name: str, latencies: list[float]) -> None:
    ms = sorted(value * 1000 for value in latencies)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(
        f"{name:10} tasks={len(ms):4}  p50={statistics.median(ms):7.1f} ms  "
        f"p99={p99:7.1f} ms  max={ms[-1]:7.1f} ms"
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
    for name in ("filesystem", "redis"):
        if name == "redis" and not redis_reachable():
            print("redis      not reachable: skipped")
            continue
        report(name, measure(name, args.tasks))


if __name__ == "__main__":
    main()
