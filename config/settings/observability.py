"""Logging, metrics and the readiness probe (docs/observability.md)."""

import logging
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
# A line per task run: beat's "Sending due task", a worker's "Task ... received" and
# "succeeded". With periodic tasks every second they drowned `make run`'s foreground log
# (issue 38), so they show only at TASK_LOG_LEVEL=INFO (or DEBUG); a task's failure is an
# ERROR and shows at the default, WARNING. Beat's own other lines stay at LOG_LEVEL.
TASK_LOGGERS = ("celery.worker.strategy", "celery.app.trace")
TASK_LOG_LEVEL = env.str("TASK_LOG_LEVEL", default="WARNING").upper()
LOGGING["loggers"].update({name: {"level": TASK_LOG_LEVEL} for name in TASK_LOGGERS})
if logging.getLevelNamesMapping().get(TASK_LOG_LEVEL, logging.WARNING) > logging.INFO:
    LOGGING["filters"]["without_task_runs"] = {"()": "config.logfilters.WithoutTaskRuns"}
    LOGGING["loggers"]["celery.beat"] = {"filters": ["without_task_runs"]}

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
# /readyz and /metrics are computed at most once this often per process and question (and one
# at a time): the last answer is given again meanwhile (config/probes.py).
PROBE_REUSE_SECONDS = env.float("PROBE_REUSE_SECONDS", default=1.0)
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
