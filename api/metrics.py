"""The API's metrics (docs/observability.md "Metrics"): every request counted and timed by
route, method, status and mode; every error envelope counted by type and code (idempotency
conflicts, rate limits, declines...); and `rate_limited()`, which a limiter calls for each
request it refuses.

prometheus-client's multiprocess mode (settings "observability") sums these over every
process of a node; /metrics (config/metrics.py) exposes them.
"""

import time

from django.conf import settings
from prometheus_client import Counter, Histogram

from infra.metrics import labelled

REQUESTS = Counter(
    "svc_http_requests",
    "HTTP requests answered, by route (the URL pattern), method, status and key mode.",
    ["route", "method", "status", "mode"],
)
LATENCY = Histogram(
    "svc_http_request_duration_seconds",
    "Time from the request reaching Django to its response, by route, method and key mode.",
    ["route", "method", "mode"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
ERRORS = Counter(
    "svc_api_errors",
    "Error envelopes answered, by type and code (idempotency_key_conflict, "
    "idempotency_key_in_use, rate_limit_exceeded, card_declined, ...).",
    ["type", "code", "mode"],
)
RATE_LIMITED = Counter(
    "svc_rate_limited",
    "Requests refused with 429 by a limiter, by the limit that refused them.",
    ["limit", "mode"],
)
NO_MODE = "none"  # no API key (the sandbox's pages, the admin, unauthenticated calls)
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}


def mode_of(request) -> str:
    api_key = getattr(request, "api_key", None)
    return getattr(api_key, "mode", None) or NO_MODE


def route_of(request) -> str:
    """The URL pattern that served the request, never the path itself (ids would make one
    series per payment)."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.route
    if request.path.startswith("/" + settings.STATIC_URL.lstrip("/")):
        return "static"
    return "unmatched"


def error_answered(error, request) -> None:
    """Count one error envelope (api.errors.exception_handler, api.middleware.error_response)."""
    labelled(
        ERRORS, error.type, error.code, mode_of(request) if request is not None else NO_MODE
    ).inc()


def rate_limited(limit: str, mode: str | None) -> None:
    """For a limiter: count one request refused with 429. `limit` names the limit (`rate`,
    `concurrency`, ...), `mode` the key's (`test`, `live`)."""
    labelled(RATE_LIMITED, limit, mode or NO_MODE).inc()


class RequestMetricsMiddleware:
    """Sits just inside RequestIdMiddleware: it sees the final status, 500s included."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        route, mode = route_of(request), mode_of(request)
        method = request.method if request.method in METHODS else "other"
        labelled(REQUESTS, route, method, str(response.status_code), mode).inc()
        labelled(LATENCY, route, method, mode).observe(time.perf_counter() - started)
        return response
