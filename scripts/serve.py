"""Start one of the service's processes from an installed virtualenv: no install, no migration
(docs/production.md "Processes"). The Procfile (`make run`), the Dockerfile and the multi-node
test start every process through here, so they all run the same command lines.

usage: serve.py web|web-test|admin|worker|webhooks|webhooks-test|beat

`web` serves the API without the back office (SERVE=api unless SERVE says otherwise; SERVE=all
for one process serving both); `web-test` is the API's test-mode pool behind the proxy (one
worker unless WEB_WORKERS says otherwise, no thread kept for live keys: docs/admission.md "Test
mode on its own processes"); `admin` serves the back office alone (SERVE=admin), on an
address and port of its own, so a flood of admin logins never takes the API's threads
(docs/back-office.md "Its own process").

Run it with the virtualenv's python from the release directory (the one holding manage.py).
Settings, from the environment:
  WEB_HOST (127.0.0.1; 0.0.0.0 in a container), WEB_PORT (else PORT, else 8000),
  WEB_WORKERS (2), WEB_THREADS (4), WEB_KILL_TIMEOUT (20 s),
  ADMIN_HOST (else WEB_HOST), ADMIN_PORT (8001), ADMIN_WORKERS (1), ADMIN_THREADS (2),
  WORKER_CONCURRENCY (2), WEBHOOKS_CONCURRENCY (16),
  BEAT_SCHEDULE (var/celerybeat-schedule).
Each thread that uses the database keeps one connection (config/settings/database.py); with
DATABASE_POOL on, unless DATABASE_POOL_MAX is set, each process's pool is sized to its threads
(plus two for background work). Either way a node's PostgreSQL connections stay within the
budget that docs/production.md "Connection budget" computes.
"""

import os
import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The pool's max may not be below its min (config/settings/database.py DATABASE_POOL_MIN,
# default 2).
POOL_MIN = int(os.environ.get("DATABASE_POOL_MIN") or 2)


def setting(name: str, default: str) -> str:
    return os.environ.get(name) or default


def refuse_a_taken_port(host: str, port: int) -> None:
    """granian binds with SO_REUSEPORT: a second copy on a port another still serves starts
    without a word, and the two share its connections. A plain bind fails on any listener."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no listener
        try:
            probe.bind((host, port))
        except OSError as error:
            sys.exit(f"serve.py web: {host}:{port} is taken ({error.strerror}); is a copy running?")


def granian(host: str, port: int, workers: str, threads: int) -> list[str]:
    refuse_a_taken_port(host, port)
    os.environ.setdefault("DATABASE_POOL_MAX", str(max(threads + 2, POOL_MIN)))
    return ["-m", "granian", "--interface", "wsgi", "--host", host, "--port", str(port)] + [
        "--workers",
        workers,
        "--blocking-threads",
        str(threads),
        "--no-ws",
        # A worker that dies is replaced; a SIGTERM drains in-flight requests, and a worker
        # still busy after this long is killed (one still loading the app when the SIGTERM
        # came exits by itself once loaded: config/draining.py).
        "--respawn-failed-workers",
        "--respawn-interval",
        "1",
        "--workers-kill-timeout",
        setting("WEB_KILL_TIMEOUT", "20"),
        "config.wsgi:application",
    ]


def web() -> list[str]:
    """The API; the admin only where SERVE=all is asked for."""
    os.environ.setdefault("SERVE", "api")
    host = setting("WEB_HOST", "127.0.0.1")
    port = int(setting("WEB_PORT", setting("PORT", "8000")))
    return granian(host, port, setting("WEB_WORKERS", "2"), int(setting("WEB_THREADS", "4")))


def web_test() -> list[str]:
    """The pool the proxy sends test keys, unproven keys and large bodies to. Test mode is what
    it is for: none of its threads is kept for live keys (API_LIVE_RESERVED_THREADS 0), so a
    merchant's sandbox load test waits its turn here instead of being shed (issue 33)."""
    os.environ.setdefault("API_LIVE_RESERVED_THREADS", "0")
    os.environ.setdefault("WEB_WORKERS", "1")
    return web()


def admin() -> list[str]:
    """The back office alone: its logins hash passwords on this process's threads only."""
    os.environ["SERVE"] = "admin"
    host = setting("ADMIN_HOST", setting("WEB_HOST", "127.0.0.1"))
    port = int(setting("ADMIN_PORT", "8001"))
    return granian(host, port, setting("ADMIN_WORKERS", "1"), int(setting("ADMIN_THREADS", "2")))


def celery_worker(queue_args: list[str], concurrency: str, pool_max: int) -> list[str]:
    os.environ.setdefault("DATABASE_POOL_MAX", str(max(pool_max, POOL_MIN)))
    return ["-m", "celery", "-A", "config", "worker", *queue_args, "--concurrency", concurrency] + [
        "--prefetch-multiplier=1",
        "--without-gossip",
        "--without-mingle",
    ]


def worker() -> list[str]:
    # Prefork: each child is a process of its own with one task at a time.
    return celery_worker([], setting("WORKER_CONCURRENCY", "2"), 1 + 2)


def webhook_deliveries(queue: str) -> list[str]:
    """A pool of delivery threads for one mode's queue (docs/webhooks.md: live never waits
    behind test)."""
    threads = setting("WEBHOOKS_CONCURRENCY", "16")
    args = ["-Q", queue, "--pool", "threads", "-n", f"{queue}@%h"]
    return celery_worker(args, threads, int(threads) + 2)


def webhooks() -> list[str]:
    return webhook_deliveries("webhooks")


def webhooks_test() -> list[str]:
    return webhook_deliveries("webhooks-test")


def beat() -> list[str]:
    os.environ.setdefault("DATABASE_POOL_MAX", str(POOL_MIN))
    schedule = setting("BEAT_SCHEDULE", str(ROOT / "var" / "celerybeat-schedule"))
    Path(schedule).parent.mkdir(parents=True, exist_ok=True)
    return ["-m", "celery", "-A", "config", "beat", "--schedule", schedule]


PROCESSES = {
    "web": web,
    "web-test": web_test,
    "admin": admin,
    "worker": worker,
    "webhooks": webhooks,
    "webhooks-test": webhooks_test,
    "beat": beat,
}


def main(argv: list[str]) -> None:
    if len(argv) != 1 or argv[0] not in PROCESSES:
        sys.exit(f"usage: serve.py {'|'.join(PROCESSES)}")
    args = PROCESSES[argv[0]]()
    os.chdir(ROOT)
    os.execv(sys.executable, [sys.executable, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
