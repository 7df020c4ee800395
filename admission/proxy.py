"""The proxy's own answers, written from the service's errors (docs/admission.md "The proxy").

haproxy answers some requests itself (no node up, a node gone mid-request, a refusal it took
over from the service). Its bodies are the service's envelope for the same error, rendered by
the service's own encoder, with haproxy's unique id as the request id: `manage.py
proxy_answers --write` puts them into deploy/haproxy.cfg, and tests/admission/test_proxy.py
fails when the file and this module disagree.

Each answer is found in the file by its directive and status: `http-error status N` (the
proxy's answer for N, whatever produced it) or `http-request tarpit deny_status N` (the
per-key refusal, the only tarpit with a body of its own).
"""

import re
from pathlib import Path

from django.conf import settings
from rest_framework.exceptions import Throttled

from admission.address import address_refusal
from api.errors import ApiFailure, NotFound, ServiceError, as_service_error
from api.renderers import dumps

CONFIG = Path(settings.BASE_DIR) / "deploy" / "haproxy.cfg"
REFUSAL_SECONDS = 10  # what the proxy's refusals tell a client to wait (its counters' window)
UNIQUE_ID = "%[unique-id]"  # haproxy's log-format for the request's id
_RETRY = "Retry with the same Idempotency-Key."


# /readyz and /metrics from the public side: each node's own, read there (docs/observability.md).
NOT_PASSED = NotFound(
    "Unrecognized request URL: probes and metrics are read from each node, not through the proxy.",
    code="unrecognized_request_url",
)


def answers() -> dict[tuple[str, int], ServiceError]:
    """(directive, status) -> the error the proxy answers there."""
    return {
        ("status", 404): NOT_PASSED,
        ("status", 429): address_refusal(REFUSAL_SECONDS),
        ("deny_status", 429): as_service_error(Throttled(wait=REFUSAL_SECONDS)),
        ("status", 502): ApiFailure(
            "The service closed the connection before answering (a node stopped "
            f"mid-request). {_RETRY}"
        ),
        ("status", 503): ApiFailure(
            f"No node of the service is available. {_RETRY}", headers={"Retry-After": "5"}
        ),
        ("status", 504): ApiFailure(f"The service did not answer in time. {_RETRY}"),
    }


def haproxy_answer(error: ServiceError) -> str:
    """What follows the status in haproxy's `http-error` or `deny_status`: the content type,
    the body as a log-format string in single quotes, and the headers."""
    marker = "request-id-placeholder"
    body = dumps(error.envelope(marker)).decode().replace(marker, UNIQUE_ID)
    if "'" in body or body.count("%") != 1:  # haproxy could not quote or would expand it
        raise ValueError(f"{body!r} cannot be written as a haproxy lf-string")
    headers = "".join(f" hdr {name} {value}" for name, value in error.headers.items())
    return f"content-type \"application/json; charset=utf-8\" lf-string '{body}'{headers}"


# `status 429 content-type "..." lf-string '...' hdr A b hdr C d` in a haproxy line.
ANSWER_RE = re.compile(
    r"\b(?P<directive>status|deny_status) (?P<status>\d{3}) "
    r"(?P<answer>content-type \"[^\"]*\" lf-string '[^']*'(?: hdr [\w-]+ \S+)*)"
)


def written(config: str) -> str:
    """`config` with every answer the proxy gives written from answers(); an answer the file
    has that answers() does not know is an error (a body written by hand)."""
    known = answers()

    def rewrite(match: re.Match) -> str:
        where = (match["directive"], int(match["status"]))
        if where not in known:
            raise ValueError(f"deploy/haproxy.cfg answers {where} by hand: add it to answers()")
        return f"{match['directive']} {match['status']} {haproxy_answer(known[where])}"

    return ANSWER_RE.sub(rewrite, config)


def missing(config: str) -> set[tuple[str, int]]:
    """The answers of answers() that `config` does not give."""
    found = {(m["directive"], int(m["status"])) for m in ANSWER_RE.finditer(config)}
    return set(answers()) - found
