"""Redis (broker, cache, rate-limit store) or the embedded defaults, and Celery
(docs/dependencies.md, docs/embedded-broker.md)."""

from config.settings.base import VAR_DIR, env

# --- broker and cache ------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
BROKER_DIR = VAR_DIR / "broker"
# A Redis that accepts and never answers costs a call this long at most, then its breaker
# (infra/breaker.py) makes calls fail at once for DEPENDENCY_RETRY_SECONDS (docs/dependencies.md).
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
# Periodic work; each room's module adds its entries with `every`.
CELERY_BEAT_SCHEDULE: dict = {}


def every(task: str, seconds: float) -> dict:
    """A beat entry running `task` every `seconds`. It expires a bit under its interval: a run
    that could not start before the next one is due is dropped, so a stalled broker or worker
    never piles up copies of the same periodic work."""
    return {"task": task, "schedule": float(seconds), "options": {"expires": seconds * 0.9}}
