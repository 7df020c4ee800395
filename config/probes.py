"""The probes and the scrape, answered before anything else in the middleware (settings
"observability"): whatever the Host header (haproxy's default check sends none; Prometheus
sends the node's address), with no API key, no rate limit, no HTTPS redirect, no request log.
"""

from asgiref.sync import async_to_sync, iscoroutinefunction
from django.http import HttpResponseNotAllowed

from config import health, metrics

ANSWERED_FIRST = {"/healthz": health.healthz, "/readyz": health.readyz, "/metrics": metrics.metrics}


class ProbeMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        view = ANSWERED_FIRST.get(request.path_info)
        if view is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        response = async_to_sync(view)(request) if iscoroutinefunction(view) else view(request)
        if hasattr(response, "render"):
            response.render()  # django-health-check's HTML page is a TemplateResponse
        return response
