"""Request budgets: rate limits, concurrency and load shedding, body size, idempotency
leases, the per-process caches and the request log (docs/request-safety.md,
docs/request-log.md)."""

import datetime

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import env
from config.settings.broker import CELERY_BEAT_SCHEDULE, every

# --- request safety (docs/request-safety.md) ---------------------------------------------------
# Per API key token bucket: `rate` tokens a second, at most `burst` at once. Test mode's are
# live's, so a merchant's sandbox load test meets the limits its launch will (issue 33,
# docs/admission.md "Load-testing the sandbox"); the test-mode pool keeps it off live traffic.
API_RATE_LIMITS = {
    "live": {
        "rate": env.float("API_RATE_LIMIT_LIVE_RATE", default=100.0),
        "burst": env.int("API_RATE_LIMIT_LIVE_BURST", default=100),
    },
    "test": {
        "rate": env.float("API_RATE_LIMIT_TEST_RATE", default=100.0),
        "burst": env.int("API_RATE_LIMIT_TEST_BURST", default=100),
    },
}
if any(limit["rate"] <= 0 or limit["burst"] < 1 for limit in API_RATE_LIMITS.values()):
    raise ImproperlyConfigured("API_RATE_LIMIT_*_RATE must be above 0 and *_BURST at least 1.")
API_RATE_LIMIT_CACHE = "default"
# Callers without a valid secret key (none, unknown, publishable) share a bucket per client
# address. Behind proxies, their networks (CIDRs) and the header they append the client to.
API_ADDRESS_RATE_LIMIT = {
    "rate": env.float("API_ADDRESS_RATE", default=20.0),
    "burst": env.int("API_ADDRESS_BURST", default=40),
}
# Well-formed keys that no row holds, looked up from anywhere: one bucket for the fleet. Past
# it, made-up keys are told from real ones by the key filter, without a query (admission/
# unknown_keys.py); a real key is never refused for it.
API_UNKNOWN_KEY_RATE_LIMIT = {
    "rate": env.float("API_UNKNOWN_KEY_RATE", default=5.0),
    "burst": env.int("API_UNKNOWN_KEY_BURST", default=20),
}
API_TRUSTED_PROXIES = env.list("API_TRUSTED_PROXIES", default=[])
API_FORWARDED_FOR_HEADER = env.str("API_FORWARDED_FOR_HEADER", default="X-Forwarded-For")
# Units of concurrent work per (merchant, mode) across the fleet (api/budgets.py): a request
# holds 1, plus 1 per API_COST_BYTES of body, plus its view's `budget_cost` beyond 1.
API_CONCURRENCY_LIMITS = {
    "live": env.int("API_CONCURRENCY_LIVE", default=32),
    "test": env.int("API_CONCURRENCY_TEST", default=8),
}
API_COST_BYTES = env.int("API_COST_BYTES", default=32 * 1024)
API_CONCURRENCY_HOLD_SECONDS = env.int("API_CONCURRENCY_HOLD_SECONDS", default=60)
# The load shedder: on/off, the threads of a web process (the variable scripts/serve.py
# starts granian with, so the two agree) and how many of them only live-mode requests may take.
API_LOAD_SHEDDING = env.bool("API_LOAD_SHEDDING", default=True)
WEB_THREADS = env.int("WEB_THREADS", default=4)
API_LIVE_RESERVED_THREADS = env.int("API_LIVE_RESERVED_THREADS", default=1)
if (
    API_ADDRESS_RATE_LIMIT["rate"] <= 0
    or API_ADDRESS_RATE_LIMIT["burst"] < 1
    or API_UNKNOWN_KEY_RATE_LIMIT["rate"] <= 0
    or API_UNKNOWN_KEY_RATE_LIMIT["burst"] < 1
    or min(API_CONCURRENCY_LIMITS.values()) < 1
    or API_COST_BYTES < 1
    or WEB_THREADS < 1
    or API_LIVE_RESERVED_THREADS < 0
):
    raise ImproperlyConfigured(
        "API_ADDRESS_RATE and API_UNKNOWN_KEY_RATE must be above 0, API_ADDRESS_BURST, "
        "API_UNKNOWN_KEY_BURST, API_CONCURRENCY_* and "
        "API_COST_BYTES and WEB_THREADS at least 1, API_LIVE_RESERVED_THREADS at least 0."
    )
# Each process keeps the API-key lookup (accounts/keycache.py), each merchant's webhook
# endpoint list (the fan-out's) and whether its test-mode failure profile injects anything
# (sandbox/profiles.py) in memory, invalidated through the configuration revision in
# PostgreSQL (infra/revision.py); off, or on SQLite, they are read from the database every time.
API_KEY_CACHE = env.bool("API_KEY_CACHE", default=True)
WEBHOOK_ENDPOINT_CACHE = env.bool("WEBHOOK_ENDPOINT_CACHE", default=True)
SANDBOX_PROFILE_CACHE = env.bool("SANDBOX_PROFILE_CACHE", default=True)
# Request bodies above this are 400 `request_too_large` (Django enforces it on reading).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("API_MAX_BODY_BYTES", default=256 * 1024)
# How long a claimed Idempotency-Key stays "in use" if its request dies without answering
# (short: the claim fences the work, docs/request-safety.md "Idempotency keys").
IDEMPOTENCY_LEASE_SECONDS = env.int("IDEMPOTENCY_LEASE_SECONDS", default=30)
CELERY_BEAT_SCHEDULE["api-purge-idempotency-records"] = every(
    "api.tasks.purge_expired_idempotency_records", 3600.0
)

# The request log kept per merchant for GET /v1/request-logs (docs/request-log.md): written by a
# background thread of each process every REQUEST_LOG_FLUSH_SECONDS, kept this long.
REQUEST_LOG_ENABLED = env.bool("REQUEST_LOG_ENABLED", default=True)
REQUEST_LOG_FLUSH_SECONDS = env.float("REQUEST_LOG_FLUSH_SECONDS", default=1.0)
REQUEST_LOG_RETENTION = datetime.timedelta(days=env.float("REQUEST_LOG_RETENTION_DAYS", default=30))
if REQUEST_LOG_RETENTION < datetime.timedelta(days=1):
    raise ImproperlyConfigured("REQUEST_LOG_RETENTION_DAYS must be at least 1.")
# Refused requests made with a publishable key (public: anyone may send them) kept per
# merchant, mode and minute by each process; the rest are counted on the last one kept
# (api/request_log_bound.py).
REQUEST_LOG_REFUSED_PUBLISHABLE_PER_MINUTE = env.int(
    "REQUEST_LOG_REFUSED_PUBLISHABLE_PER_MINUTE", default=60
)
if REQUEST_LOG_REFUSED_PUBLISHABLE_PER_MINUTE < 1:
    raise ImproperlyConfigured("REQUEST_LOG_REFUSED_PUBLISHABLE_PER_MINUTE must be at least 1.")
CELERY_BEAT_SCHEDULE["api-purge-request-log"] = every("api.tasks.purge_old_request_log", 3600.0)
