"""Test settings: the real settings with test-only secrets and fast password hashing.

scripts/test.sh decides DATABASE_URL and REDIS_URL (PostgreSQL + Redis when reachable, and
always under CI) before this module is imported.
"""

import os
import tempfile

# A developer's .env (make run) must not leak into the suite or the processes it starts.
os.environ.setdefault("ENV_FILE", "")
os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("API_KEY_PEPPER", "test-only-pepper")
# Suites send many requests per key, often with the clock frozen (no refill): rate-limit tests
# set their own low limits through the `settings` fixture.
for _mode in ("LIVE", "TEST"):
    os.environ.setdefault(f"API_RATE_LIMIT_{_mode}_RATE", "100000")
    os.environ.setdefault(f"API_RATE_LIMIT_{_mode}_BURST", "100000")

# The suite's metric files in a directory of its own run (the processes it starts share it).
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="svc-test-metrics-"))

from config.settings import *  # noqa: E402,F403

# No background thread: a test reads the request log after api.requestlog.writer.flush(), on
# its own connection (inside its transaction).
REQUEST_LOG_FLUSH_SECONDS = 0
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"  # noqa: F405
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405  (whitenoise warns on a missing root)
