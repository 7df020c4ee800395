"""The probes and the scrape, answered before anything else in the middleware (settings
"observability"): whatever the Host header (haproxy's default check sends none; Prometheus
sends the node's address), with no API key, no rate limit, no HTTPS redirect, no request log.

/readyz and /metrics read the database, and nothing stops anyone who reaches a node from asking
(issue 35: eight threads took another merchant's p50 from 14 to 192 ms). So each process
computes at most one of each at a time, and at most one a PROBE_REUSE_SECONDS per question:
meanwhile the last answer to the same question is given again, and with none yet, 503 at once.
The first COPIES_PER_PATH questions a process is asked are the ones it keeps (the load
balancer's and the scraper's come within its first seconds), so cycling headers cannot push
them out (docs/observability.md "Probes"). The shipped proxy does not pass them from outside.
"""

import threading
import time

from asgiref.sync import async_to_sync, iscoroutinefunction
from django.conf import settings
from django.http import HttpResponse, HttpResponseNotAllowed

from config import health, metrics

ANSWERED_FIRST = {"/healthz": health.healthz, "/readyz": health.readyz, "/metrics": metrics.metrics}
REUSED = {"/readyz", "/metrics"}  # the ones that read the database
COPIES_PER_PATH = 16  # questions (scope, format, token) whose answers are kept, per path


class ProbeMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        view = ANSWERED_FIRST.get(request.path_info)
        if view is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        if request.path_info in REUSED:
            return recent.answer(request, lambda: _run(view, request))
        return _run(view, request)


def _run(view, request) -> HttpResponse:
    response = async_to_sync(view)(request) if iscoroutinefunction(view) else view(request)
    if hasattr(response, "render"):
        response.render()  # django-health-check's HTML page is a TemplateResponse
    return response


def _question(request) -> tuple:
    """What the answer depends on: the query (scope, format), Accept, and the token /metrics
    checks (so an unauthorised caller is never given an authorised answer)."""
    headers = request.headers
    return (
        request.META.get("QUERY_STRING", ""),
        headers.get("Accept", ""),
        headers.get("Authorization", ""),
    )


class RecentAnswers:
    """Per path: one computation at a time, and its answers kept as (when, status, body,
    headers) to build a new response from (outer middleware adds headers to each)."""

    def __init__(self, paths):
        self._running = {path: threading.Lock() for path in paths}
        self._copies: dict[str, dict] = {path: {} for path in paths}

    def answer(self, request, compute) -> HttpResponse:
        path, question = request.path_info, _question(request)
        copies = self._copies[path]
        copy = copies.get(question)
        if copy is not None and time.monotonic() - copy[0] < settings.PROBE_REUSE_SECONDS:
            return _rebuilt(copy)
        if not self._running[path].acquire(blocking=False):
            return _busy() if copy is None else _rebuilt(copy)
        try:
            response = compute()
            if question in copies or len(copies) < COPIES_PER_PATH:
                copies[question] = (
                    time.monotonic(),
                    response.status_code,
                    response.content,
                    list(response.items()),
                )
            return response
        finally:
            self._running[path].release()

    def forget(self) -> None:
        """Tests: each starts with no answer kept."""
        for copies in self._copies.values():
            copies.clear()


def _rebuilt(copy: tuple) -> HttpResponse:
    _, status, content, headers = copy
    response = HttpResponse(content, status=status)
    for name, value in headers:
        response[name] = value
    return response


def _busy() -> HttpResponse:
    response = HttpResponse(
        "busy: this process is answering the same probe\n",
        status=503,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = "1"
    return response


recent = RecentAnswers(REUSED)
