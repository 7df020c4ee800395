"""Logging, metrics and the readiness probe (docs/observability.md)."""

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import INSTALLED_APPS, MIDDLEWARE, VAR_DIR, env

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
INSTALLED_APPS.extend(["health_check", "config"])
MIDDLEWARE.insert(0, "config.probes.ProbeMiddleware")
MIDDLEWARE.insert(
    MIDDLEWARE.index("api.middleware.RequestIdMiddleware") + 1,
    "api.metrics.RequestMetricsMiddleware",
)
# A failed readiness check is reported once per change by config.health, not per probe.
LOGGING["loggers"]["health_check"] = {"level": "ERROR"}
