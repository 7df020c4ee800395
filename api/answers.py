"""An answer's bytes, made by a pure function of a service's result: what a money-moving
request sends, and what its Idempotency-Key keeps for replay (api.idempotency.answer_store),
the same bytes whether or not a transaction is open and without DRF's machinery."""

from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpResponse

from api import metrics
from api.errors import ServiceError
from api.renderers import dumps

JSON_CONTENT_TYPE = "application/json; charset=utf-8"


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    content_type: str = JSON_CONTENT_TYPE
    error: ServiceError | None = None  # the error it reports, counted when sent (not stored)


def data_answer(data: dict, status: int = 200) -> Answer:
    return Answer(status, dumps(data))


def error_answer(error: ServiceError, request_id: str | None) -> Answer:
    """The error envelope, as api.errors.exception_handler renders it."""
    return Answer(error.status, dumps(error.envelope(request_id)), error=error)


Render = Callable[[object, str | None], Answer]


def answer_of(render: Render, request_id: str | None, result) -> Answer:
    """The answer to `result`: a service's result rendered by `render`, or the refusal it
    returned (a ServiceError, as a value) in the envelope."""
    if isinstance(result, ServiceError):
        return error_answer(result, request_id)
    return render(result, request_id)


def http_response(answer: Answer, request) -> HttpResponse:
    if answer.error is not None:
        metrics.error_answered(answer.error, request)
    return HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)
