"""The request log: one structured line per API request, card- and key-shaped strings
redacted.

Two layers keep card numbers and keys out of the logs: the request log redacts its own fields
before logging them, and api.logfilters.RedactCardData redacts every record before it is written.
"""

import json
import logging
import time

from api.idempotency import KEY_HEADER, REPLAYED_HEADER
from api.logfilters import redact_log_text

log = logging.getLogger("api.request")

API_PREFIX = "/v1/"


def request_log_fields(request, response, duration_ms: float) -> dict:
    api_key = getattr(request, "api_key", None)
    fields = {
        "method": request.method,
        "path": request.path,
        "status": response.status_code,
        "merchant": getattr(api_key, "merchant_id", None),
        "key_id": getattr(api_key, "id", None),
        "mode": getattr(api_key, "mode", None),
        "request_id": getattr(request, "request_id", None),
        "idempotency_key": request.META.get(KEY_HEADER),
        "replayed": response.get(REPLAYED_HEADER) == "true",
        "duration_ms": round(duration_ms, 1),
    }
    if fields["replayed"]:
        fields["original_request_id"] = response["X-Request-Id"]
    return {
        name: redact_log_text(value) if isinstance(value, str) else value
        for name, value in fields.items()
    }


class RequestLogMiddleware:
    """Sits just inside RequestIdMiddleware, so it sees the request id and the final status
    (500s included). Bodies are never logged."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        if request.path.startswith(API_PREFIX) and log.isEnabledFor(logging.INFO):
            fields = request_log_fields(request, response, (time.perf_counter() - started) * 1000)
            log.info(json.dumps(fields), extra={"request_log": fields})
        return response
