"""Test settings: the real settings with test-only secrets and fast password hashing.

scripts/test.sh decides DATABASE_URL and REDIS_URL (PostgreSQL + Redis when reachable, and
always under CI) before this module is imported.
"""

import os
import tempfile
from urllib.parse import urlsplit, urlunsplit

# A developer's .env (make run) must not leak into the suite or the processes it starts.
os.environ.setdefault("ENV_FILE", "")
os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("API_KEY_PEPPER", "test-only-pepper")
# Suites send many requests per key, often with the clock frozen (no refill): rate-limit tests
# set their own low limits through the `settings` fixture.
for _mode in ("LIVE", "TEST"):
    os.environ.setdefault(f"API_RATE_LIMIT_{_mode}_RATE", "100000")
    os.environ.setdefault(f"API_RATE_LIMIT_{_mode}_BURST", "100000")
# Likewise the per-address bucket and the concurrency budgets (every test client is 127.0.0.1,
# race tests send dozens at once), and no shedding (the live server's threads are the suite's).
os.environ.setdefault("API_ADDRESS_RATE", "100000")
os.environ.setdefault("API_ADDRESS_BURST", "100000")
os.environ.setdefault("API_CONCURRENCY_LIVE", "100000")
os.environ.setdefault("API_CONCURRENCY_TEST", "100000")
os.environ.setdefault("API_LOAD_SHEDDING", "false")
# Staff sign in with a password alone unless a test enrols a device or turns the setting on.
os.environ.setdefault("ADMIN_REQUIRE_2FA", "false")

# Each probe computed anew (the processes the suite starts inherit it): a test that changes
# what /readyz or /metrics reads asks again at once. tests/observability/test_probe_limits.py
# sets it to see the reuse.
os.environ.setdefault("PROBE_REUSE_SECONDS", "0")

# The suite's metric files in a directory of its own run (the processes it starts share it);
# under pytest-xdist one per worker, as /metrics sums every file there: a test counting the
# requests of a route saw the other worker's too.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER and f"-{_WORKER}-" not in os.environ.get("PROMETHEUS_MULTIPROC_DIR", ""):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix=f"svc-test-metrics-{_WORKER}-")
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="svc-test-metrics-"))


def _own_redis_database(url: str, worker: str) -> str:
    """`url` on another database for pytest-xdist's `worker` (gw0, gw1, ...): the next ones
    after the suite's, wrapping within Redis's 16."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(base + 1 + int(worker[2:])) % 16}"))


# Under pytest-xdist each worker has a Redis database of its own, as pytest-django gives it a
# PostgreSQL database of its own: one worker's broker messages and cache keys never reach
# another's tests or the Celery workers they start (which inherit it).
if os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw") and os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = _own_redis_database(
        os.environ["REDIS_URL"], os.environ["PYTEST_XDIST_WORKER"]
    )

from config.settings import *  # noqa: E402,F403

# No background thread: a test reads the request log after api.request_recorder.writer.flush(), on
# its own connection (inside its transaction).
REQUEST_LOG_FLUSH_SECONDS = 0
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"  # noqa: F405
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405  (whitenoise warns on a missing root)
