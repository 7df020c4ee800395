"""Settings, all from the environment (django-environ), each listed in docs/configuration.md.

With no DATABASE_URL and no REDIS_URL the service runs on embedded defaults: a SQLite file
under var/ and a filesystem Celery broker shared by the web, worker and beat processes.
"""

import datetime
import ipaddress
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
# The development .env `make run` writes when absent (DEBUG on, random dev-only secrets), read
# under the real environment, which wins; ENV_FILE="" reads none (docs/operations.md).
ENV_FILE = env.str("ENV_FILE", default=str(BASE_DIR / ".env"))
if ENV_FILE and Path(ENV_FILE).is_file():
    environ.Env.read_env(ENV_FILE)

DEBUG = env.bool("DEBUG", default=False)


def _required_unless_debug(name: str, dev_value: str) -> str:
    """Production refuses to start on a missing secret; DEBUG gets a dev-only value."""
    value = env.str(name, default="")
    if value:
        return value
    if DEBUG:
        return dev_value
    raise ImproperlyConfigured(
        f"{name} must be set when DEBUG is off (set DEBUG=true for local development only)."
    )


SECRET_KEY = _required_unless_debug("DJANGO_SECRET_KEY", "dev-only-secret-key-not-for-production")
# Rotation: previous keys, still accepted for what they signed (docs/production.md "Rotating").
SECRET_KEY_FALLBACKS = env.list("DJANGO_SECRET_KEY_FALLBACKS", default=[])
API_KEY_PEPPER = _required_unless_debug("API_KEY_PEPPER", "dev-only-pepper-not-for-production")
# Pepper rotation: new keys are hashed with API_KEY_PEPPER under API_KEY_PEPPER_VERSION; keys
# hashed under an older pepper keep working while it is listed here as "version=value,...".
API_KEY_PEPPER_VERSION = env.int("API_KEY_PEPPER_VERSION", default=1)
API_KEY_OLD_PEPPERS = env.dict("API_KEY_OLD_PEPPERS", default={})

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
PORT = env.int("PORT", default=8000)
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default=f"http://127.0.0.1:{PORT}").rstrip("/")

# --- HTTPS and the TLS-terminating proxy in front (docs/deployment.md) -------------------------
_public = urlsplit(PUBLIC_BASE_URL)
if _public.scheme not in ("http", "https") or not _public.netloc:
    raise ImproperlyConfigured(
        "PUBLIC_BASE_URL must be an http(s) URL, e.g. https://pay.example.com"
    )
PUBLIC_HTTPS = _public.scheme == "https"
# Opt-in: the header the proxy sets to "https" (and never passes on from a client), e.g.
# X-Forwarded-Proto. Unset, every request counts as plain HTTP, whatever a client claims.
_proxy_header = env.str("SECURE_PROXY_SSL_HEADER", default="")
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https") if _proxy_header else None
)
# The public origin is trusted whatever Host and scheme the proxy hands on (the challenge
# page's form POST carries it as Origin).
CSRF_TRUSTED_ORIGINS = [f"{_public.scheme}://{_public.netloc}"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = PUBLIC_HTTPS
# On by default only when Django can tell an HTTPS request: without the proxy header every
# request would be redirected, the redirected one too.
SECURE_SSL_REDIRECT = env.bool(
    "SECURE_SSL_REDIRECT", default=PUBLIC_HTTPS and SECURE_PROXY_SSL_HEADER is not None
)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if PUBLIC_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Redoc for /docs/, served from our static files (no CDN)
    "api",
    "accounts",
    "events",
    "webhooks",
    "payments",
    "refunds",
    "sandbox",
]

MIDDLEWARE = [
    "api.middleware.RequestIdMiddleware",
    "api.requestlog.RequestLogMiddleware",
    "api.budgets.LoadShedMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database --------------------------------------------------------------------------------
DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
}
# A Unix-socket directory is written percent-encoded in the URL, as libpq reads it
# (postgres://user@%2Fvar%2Frun%2Fpostgresql/name); django-environ leaves it encoded.
DATABASES["default"]["HOST"] = unquote(DATABASES["default"].get("HOST", ""))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Writers take the lock when the transaction begins, so concurrent requests queue for it
    # instead of failing with "database is locked" half-way through.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    options = DATABASES["default"].setdefault("OPTIONS", {})
    # Parameters bound by the server, and statements a connection runs often prepared (after
    # 5 runs): no parse and plan per statement, no quoting in Python (docs/payments.md
    # "Performance"). Off for a pooler that cannot keep prepared statements (PgBouncer in
    # transaction mode).
    options["server_side_binding"] = env.bool("DATABASE_SERVER_SIDE_BINDING", default=True)
    # Django leaves psycopg's preparing off unless OPTIONS asks for it, so until 2026-11-23
    # nothing was prepared (~1 ms of PostgreSQL CPU a payment: docs/payments.md "Benchmark").
    options["prepare_threshold"] = 5 if options["server_side_binding"] else None
    if options["server_side_binding"]:
        # A prepared statement's generic plan is made without the merchant id: a small
        # merchant's filtered list then walks a big merchant's rows (docs/data.md "Reads at
        # scale"). Each execution is planned for its own parameters; the parse stays saved.
        # Appended to any options the URL carries; not sent to a pooler (binding off there).
        startup = options.get("options", "")
        options["options"] = f"{startup} -c plan_cache_mode=force_custom_plan".strip()
    if env.bool("DATABASE_POOL", default=True):
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool owns connection lifetime
        options["pool"] = {
            "min_size": env.int("DATABASE_POOL_MIN", default=2),
            "max_size": env.int("DATABASE_POOL_MAX", default=16),
            "timeout": 10,
        }
        # With the pool, Django 5.2 has psycopg_pool check each connection as it hands it out
        # (ConnectionPool.check_connection: one empty query): after a server restart the
        # pool's connections are dead, and a request must not get one.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("DATABASE_POOL_CHECK", default=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- broker and cache ------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
BROKER_DIR = VAR_DIR / "broker"
# A Redis that accepts and never answers costs a call this long at most, then its breaker
# (api/breaker.py) makes calls fail at once for DEPENDENCY_RETRY_SECONDS (docs/dependencies.md).
REDIS_TIMEOUT = env.float("REDIS_TIMEOUT", default=0.5)
DEPENDENCY_RETRY_SECONDS = env.float("DEPENDENCY_RETRY_SECONDS", default=2.0)
REDIS_CLIENT_OPTIONS = {"socket_timeout": REDIS_TIMEOUT, "socket_connect_timeout": REDIS_TIMEOUT}
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = dict(REDIS_CLIENT_OPTIONS)
    CELERY_BROKER_CONNECTION_TIMEOUT = REDIS_TIMEOUT
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": REDIS_CLIENT_OPTIONS,
        }
    }
else:
    # kombu's filesystem transport without its empty-file race (config/broker.py): no server,
    # shared by every process through var/broker.
    CELERY_BROKER_URL = "embedded://localhost/"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR),
        "data_folder_out": str(BROKER_DIR),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        # kombu polls the folder; its 1 s default puts ~0.5 s on every task (bench_broker.py).
        "polling_interval": 0.05,
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
# Periodic work; each room adds its entries in its own section below.
CELERY_BEAT_SCHEDULE: dict = {}
CELERY_BEAT_SCHEDULE["api-purge-idempotency-records"] = {
    "task": "api.tasks.purge_expired_idempotency_records",
    "schedule": 3600.0,
    "options": {"expires": 3300},
}

# --- email -----------------------------------------------------------------------------------
EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="payments@localhost")

# --- i18n, time, static ----------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
FORMAT_MODULE_PATH = ["config.formats"]  # the admin's times to the second, in UTC
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- the API ---------------------------------------------------------------------------------
API_VERSION = "2026-08-19"
SUPPORTED_API_VERSIONS = ("2026-08-19",)

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.ServiceJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.AnyContentTypeJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.KeyMayCallView"],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["api.ratelimit.ApiKeyRateLimit"],
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%SZ",
    "COERCE_DECIMAL_TO_STRING": False,
    "DEFAULT_SCHEMA_CLASS": "api.openapi.ServiceAutoSchema",
}

# --- the OpenAPI description (docs/openapi.md) -------------------------------------------------
SPECTACULAR_SETTINGS = {
    "OAS_VERSION": "3.1.0",
    "TITLE": "Payment service API",
    "LICENSE": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
    "DESCRIPTION": "REST/JSON payments, refunds, signed webhooks and a test-mode simulator.",
    "VERSION": API_VERSION,
    "SCHEMA_PATH_PREFIX": r"/v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_AUTHENTICATION": [],
    "REDOC_DIST": "SIDECAR",
    "WEBHOOKS": ["webhooks.openapi.EVENT_WEBHOOK"],
    # Self-hosted: the API is on the host serving the description (PUBLIC_BASE_URL).
    "SERVERS": [{"url": "/", "description": "The host serving this description."}],
    # Several resources have a `status` or a `type`: each set of choices gets its own name.
    "ENUM_NAME_OVERRIDES": {
        "PaymentStatus": "payments.states.Status",
        "CaptureMethod": "payments.models.Payment.CaptureMethod",
        "TokenType": "payments.models.Token.Type",
        "RefundStatus": "refunds.states.RefundStatus",
        "WebhookAttemptStatus": "webhooks.models.Attempt.Status",
        "WebhookEndpointStatus": "webhooks.openapi.ENDPOINT_STATUSES",
        "EventType": "webhooks.openapi.EVENT_TYPE_CHOICES",
        "ErrorType": "api.openapi.ERROR_TYPES",
        "PaymentMethodType": "payments.openapi.METHOD_TYPES",
        "ThreeDSStatus": "payments.openapi.THREE_DS_STATUSES",
        "AvsResult": "payments.openapi.AVS_RESULTS",
        "CvvResult": "payments.openapi.CVV_RESULTS",
        "RiskDecision": "payments.openapi.RISK_DECISIONS",
        "NextActionType": "payments.openapi.NEXT_ACTION_TYPES",
        "RefundFailureCode": "refunds.openapi.FAILURE_CODE_CHOICES",
        "PaymentEventType": "webhooks.openapi.PAYMENT_EVENT_TYPES",
        "RefundEventType": "webhooks.openapi.REFUND_EVENT_TYPES",
    },
    # Every enum marked open (docs/openapi.md "Decisions").
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.openapi.mark_enums_open",
    ],
}

# --- request safety (docs/request-safety.md) ---------------------------------------------------
# Per API key token bucket: `rate` tokens a second, at most `burst` at once.
API_RATE_LIMITS = {
    "live": {
        "rate": env.float("API_RATE_LIMIT_LIVE_RATE", default=100.0),
        "burst": env.int("API_RATE_LIMIT_LIVE_BURST", default=100),
    },
    "test": {
        "rate": env.float("API_RATE_LIMIT_TEST_RATE", default=25.0),
        "burst": env.int("API_RATE_LIMIT_TEST_BURST", default=25),
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
    or min(API_CONCURRENCY_LIMITS.values()) < 1
    or API_COST_BYTES < 1
    or WEB_THREADS < 1
    or API_LIVE_RESERVED_THREADS < 0
):
    raise ImproperlyConfigured(
        "API_ADDRESS_RATE must be above 0, API_ADDRESS_BURST, API_CONCURRENCY_* and "
        "API_COST_BYTES and WEB_THREADS at least 1, API_LIVE_RESERVED_THREADS at least 0."
    )
# Each process keeps the API-key lookup (accounts/keycache.py) and each merchant's webhook
# endpoint list (the fan-out's) in memory, invalidated through the configuration revision in
# PostgreSQL (api/revision.py); off, or on SQLite, they are read from the database every time.
API_KEY_CACHE = env.bool("API_KEY_CACHE", default=True)
WEBHOOK_ENDPOINT_CACHE = env.bool("WEBHOOK_ENDPOINT_CACHE", default=True)
# Request bodies above this are 400 `request_too_large` (Django enforces it on reading).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("API_MAX_BODY_BYTES", default=256 * 1024)
# How long a claimed Idempotency-Key stays "in use" if its request dies without answering
# (short: the claim fences the work, docs/request-safety.md "Idempotency keys").
IDEMPOTENCY_LEASE_SECONDS = env.int("IDEMPOTENCY_LEASE_SECONDS", default=30)

# The request log kept per merchant for GET /v1/request-logs (docs/request-log.md): written by a
# background thread of each process every REQUEST_LOG_FLUSH_SECONDS, kept this long.
REQUEST_LOG_ENABLED = env.bool("REQUEST_LOG_ENABLED", default=True)
REQUEST_LOG_FLUSH_SECONDS = env.float("REQUEST_LOG_FLUSH_SECONDS", default=1.0)
REQUEST_LOG_RETENTION = datetime.timedelta(days=env.float("REQUEST_LOG_RETENTION_DAYS", default=30))
if REQUEST_LOG_RETENTION < datetime.timedelta(days=1):
    raise ImproperlyConfigured("REQUEST_LOG_RETENTION_DAYS must be at least 1.")
CELERY_BEAT_SCHEDULE["api-purge-request-log"] = {
    "task": "api.tasks.purge_old_request_log",
    "schedule": 3600.0,
    "options": {"expires": 3300},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {"redact_card_data": {"()": "api.logfilters.RedactCardData"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["redact_card_data"],
        }
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}
# Called by events.emit() inside the transaction that writes events (docs/webhooks.md).
EVENT_FAN_OUT_HOOKS: list[str] = ["webhooks.services.fan_out_in_transaction"]

# --- webhooks (docs/webhooks.md) -------------------------------------------------------------
# CIDRs exempt from the private-address rule (local receivers); a malformed one fails loudly.
WEBHOOK_ALLOWED_NETWORKS = [
    ipaddress.ip_network(cidr, strict=False)
    for cidr in env.list("WEBHOOK_ALLOWED_NETWORKS", default=[])
]
WEBHOOK_CA_BUNDLE = env.str("WEBHOOK_CA_BUNDLE", default="") or None  # None: system CAs
# Fernet keys for webhook secrets at rest, newest first; empty: derived from SECRET_KEY.
WEBHOOK_ENCRYPTION_KEYS = env.list("WEBHOOK_ENCRYPTION_KEYS", default=[])
# Events (with their deliveries and attempts) are deleted this long after their creation
# (docs/data.md "Retention"); the 72-hour retry window is the floor.
EVENT_RETENTION = datetime.timedelta(days=env.float("EVENT_RETENTION_DAYS", default=30))
if EVENT_RETENTION < datetime.timedelta(hours=72):
    raise ImproperlyConfigured("EVENT_RETENTION_DAYS must be at least 3 (the retry window).")
CELERY_TASK_ROUTES = {
    # Housekeeping takes no delivery thread: an exact name wins over the pattern.
    "webhooks.tasks.purge_old_events": {"queue": "celery"},
    "webhooks.tasks.*": {"queue": "webhooks"},
}
# One merchant's endpoints of one mode (an account) may have at most this many attempts in
# flight at once, fleet-wide: with the Procfile's 16 threads per mode, a merchant whose
# endpoints all hang keeps a quarter of them free for everyone else (docs/webhooks.md
# "Fairness between merchants").
WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT = env.int("WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT", default=12)
if WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT < 1:
    raise ImproperlyConfigured("WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT must be at least 1.")
CELERY_BEAT_SCHEDULE.update(
    {
        # Due first attempts and retries (rows with next_attempt_at), and expired leases.
        "webhooks-deliver-due": {
            "task": "webhooks.tasks.deliver_due",
            "schedule": 1.0,
            "options": {"expires": 0.9},
        },
        "webhooks-purge-old-events": {
            "task": "webhooks.tasks.purge_old_events",
            "schedule": 3600.0,
            "options": {"expires": 3300},
        },
        # Events whose after-commit nudge was lost (spec "Retries and dead letter" 3).
        "webhooks-sweep": {
            "task": "webhooks.tasks.sweep_undispatched",
            "schedule": 300.0,
            "options": {"expires": 290.0},
        },
    }
)

# --- payments --------------------------------------------------------------------------------
# Connector per mode (payments.connectors). Test keys go to the simulator; with no live
# connector configured a live payment is 422 no_route.
PAYMENT_CONNECTORS: dict[str, str] = {"test": "sandbox.simulator.SimulatorConnector"}
# Per-transaction limit, in minor units of the payment's currency, for merchants whose own
# `transaction_limit` is empty (docs/methods.md "Per-account transaction limit").
PAYMENT_TRANSACTION_LIMIT = env.int("PAYMENT_TRANSACTION_LIMIT", default=100_000_000)
# How old a `started` connector operation must be before beat takes it for abandoned by its
# process and asks the connector again (longer than any connector call takes).
OPERATION_RECOVERY_SECONDS = env.int("OPERATION_RECOVERY_SECONDS", default=60)
# Finished operations are deleted this long after they started (docs/data.md "Retention"); the
# 24-hour idempotency replay window (a retry resumes its operation) is the floor.
OPERATION_RETENTION = datetime.timedelta(days=env.float("OPERATION_RETENTION_DAYS", default=7))
if OPERATION_RETENTION < datetime.timedelta(days=2):
    raise ImproperlyConfigured("OPERATION_RETENTION_DAYS must be at least 2.")
if not 0 < PAYMENT_TRANSACTION_LIMIT < 2**53:
    raise ImproperlyConfigured("PAYMENT_TRANSACTION_LIMIT must be a positive integer below 2^53.")
CELERY_BEAT_SCHEDULE.update(
    {
        # `expires` a bit under the interval: a run that could not start in time is dropped.
        "payments-resolve-due": {
            "task": "payments.tasks.resolve_due_payments",
            "schedule": 10.0,
            "options": {"expires": 9},
        },
        "payments-expire-due": {
            "task": "payments.tasks.expire_due_payments",
            "schedule": 60.0,
            "options": {"expires": 55},
        },
        # Connector operations left `started` by a process that died (docs/payments.md
        # "Connector operations").
        "payments-recover-operations": {
            "task": "payments.tasks.recover_operations",
            "schedule": 30.0,
            "options": {"expires": 25},
        },
        "payments-purge-finished-operations": {
            "task": "payments.tasks.purge_finished_operations",
            "schedule": 3600.0,
            "options": {"expires": 3300},
        },
        "payments-purge-unused-tokens": {
            "task": "payments.tasks.purge_unused_tokens",
            "schedule": 3600.0,
            "options": {"expires": 3300},
        },
    }
)
# Simulated issuer waits (`_svc_test_latency_ms`) one merchant may have at once; one more is
# 429 (docs/payments.md "Simulated latency").
SANDBOX_LATENCY_CONCURRENCY = env.int("SANDBOX_LATENCY_CONCURRENCY", default=2)
# Units of the merchant's test-mode budget (API_CONCURRENCY_LIMITS) a wait holds beyond its
# request's own (docs/request-safety.md "Budgets").
SANDBOX_LATENCY_COST = env.int("SANDBOX_LATENCY_COST", default=2)
CELERY_BEAT_SCHEDULE["sandbox-purge-challenge-sessions"] = {
    "task": "sandbox.tasks.purge_old_challenge_sessions",
    "schedule": 3600.0,
    "options": {"expires": 3300},
}

# --- refunds ---------------------------------------------------------------------------------
CELERY_BEAT_SCHEDULE["refunds-resolve-due"] = {
    "task": "refunds.tasks.resolve_due_refunds",
    "schedule": 10.0,
    "options": {"expires": 9},
}
CELERY_BEAT_SCHEDULE["refunds-recover-operations"] = {
    "task": "refunds.tasks.recover_refund_operations",
    "schedule": 30.0,
    "options": {"expires": 25},
}

# --- observability (docs/observability.md) ---------------------------------------------------
# Counters and histograms of every process of a node (granian's workers, the Celery workers)
# are files in this directory, summed by /metrics (prometheus-client's multiprocess mode, which
# reads PROMETHEUS_MULTIPROC_DIR when it is imported: set here, before any room imports it).
# Empty it when the node starts, before its processes (make run does).
METRICS_DIR = Path(env.str("PROMETHEUS_MULTIPROC_DIR", default=str(VAR_DIR / "metrics")))
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(METRICS_DIR)
try:
    METRICS_DIR.mkdir(parents=True, exist_ok=True)
except OSError as error:
    raise ImproperlyConfigured(
        f"PROMETHEUS_MULTIPROC_DIR {METRICS_DIR} cannot be made ({error.strerror}): "
        "set it to a directory every process of this node can write."
    ) from error
# Set: /metrics answers only `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# /readyz: how old beat's last heartbeat and the oldest due webhook delivery may be (seconds;
# 0 leaves the check out), and how long one check may take before it counts as failed.
READINESS_BEAT_MAX_AGE = env.float("READINESS_BEAT_MAX_AGE", default=60.0)
READINESS_WEBHOOK_MAX_AGE = env.float("READINESS_WEBHOOK_MAX_AGE", default=600.0)
READINESS_CHECK_TIMEOUT = env.float("READINESS_CHECK_TIMEOUT", default=2.0)
# Plain-HTTP probes and scrapes are answered, not redirected to HTTPS (docs/deployment.md).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
# The probes and /metrics are answered before the host check, the API key and the rate limit
# (config/probes.py); every other request is counted and timed (api/metrics.py).
INSTALLED_APPS += ["health_check", "config"]
MIDDLEWARE.insert(0, "config.probes.ProbeMiddleware")
MIDDLEWARE.insert(
    MIDDLEWARE.index("api.middleware.RequestIdMiddleware") + 1,
    "api.metrics.RequestMetricsMiddleware",
)
# A failed readiness check is reported once per change by config.health, not per probe.
LOGGING["loggers"]["health_check"] = {"level": "ERROR"}

# --- the back office (docs/back-office.md) ---------------------------------------------------
# What this process serves: "all" (one process, the default), "api" (no admin) or "admin" (the
# admin alone, for a process on an internal address): same code, another root URLconf.
SERVE = env.str("SERVE", default="all")
SERVED_URLCONFS = {"all": "config.urls", "api": "config.urls_api", "admin": "config.urls_admin"}
if SERVE not in SERVED_URLCONFS:
    raise ImproperlyConfigured(f"SERVE must be one of {', '.join(SERVED_URLCONFS)}.")
ROOT_URLCONF = SERVED_URLCONFS[SERVE]
# Login throttle and lockout (django-axes; accounts/loginlimits.py): a locked attempt is
# refused before any password hash is computed.
INSTALLED_APPS.append("axes")
MIDDLEWARE.append("accounts.adminguard.RefuseNulInAdminMiddleware")
MIDDLEWARE.append("axes.middleware.AxesMiddleware")  # last, as axes asks
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "accounts.loginlimits.AdminLoginHandler"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = env.int("ADMIN_LOGIN_FAILURE_LIMIT", default=5)
ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT = env.int("ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT", default=20)
AXES_COOLOFF_TIME = datetime.timedelta(minutes=env.int("ADMIN_LOGIN_COOLOFF_MINUTES", default=15))
AXES_RESET_ON_SUCCESS = True
# A locked attempt is not counted: it writes nothing, and does not stretch the owner's cool-off.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_VERBOSE = False
if AXES_FAILURE_LIMIT < 1 or ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT < AXES_FAILURE_LIMIT:
    raise ImproperlyConfigured(
        "ADMIN_LOGIN_FAILURE_LIMIT must be at least 1 and ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT at "
        "least as large."
    )
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGGING["loggers"]["axes"] = {"level": "WARNING"}  # lockouts, not every attempt
