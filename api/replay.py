"""Answering a request with the response stored under its Idempotency-Key: byte for byte,
marked as a replay, decrypted where its view keeps its responses encrypted (api.idempotency
stores them)."""

import logging
from typing import Protocol

from django.http import HttpResponse

from api.errors import ApiFailure
from api.models import IdempotencyRecord

log = logging.getLogger("api.idempotency")

REPLAYED_HEADER = "Idempotent-Replayed"


class UnreadableStoredResponse(Exception):
    """A stored response none of the configured keys decrypts (a key dropped)."""


class BodyCipher(Protocol):
    """How a view whose responses show a secret has them kept: encrypted at rest."""

    def encrypt(self, data: bytes) -> bytes: ...

    def decrypt(self, data: bytes) -> bytes:
        """Raises UnreadableStoredResponse when no configured key decrypts `data`."""


def replay_response(record: IdempotencyRecord, cipher: BodyCipher | None = None) -> HttpResponse:
    """The original response, byte for byte, with its original X-Request-Id."""
    body = bytes(record.body) if cipher is None else _decrypted(record, cipher)
    response = HttpResponse(body, status=record.status, content_type=record.content_type)
    response[REPLAYED_HEADER] = "true"
    response["X-Request-Id"] = record.request_id
    return response


def _decrypted(record: IdempotencyRecord, cipher: BodyCipher) -> bytes:
    """The stored body decrypted; when no key decrypts it, a 500 that says what happened
    rather than "retry": a retry meets the same record for the rest of its 24 hours, and
    running the request again could repeat work that completed (a second endpoint)."""
    try:
        return cipher.decrypt(bytes(record.body))
    except UnreadableStoredResponse:
        log.error(
            "stored response of idempotency record %s is unreadable: the key it was encrypted "
            "with is no longer configured (docs/webhooks.md, encryption keys)",
            record.pk,
        )
        raise ApiFailure(
            "The request sent with this Idempotency-Key completed, but its response was kept "
            "encrypted and can no longer be read, so it cannot be replayed, and retrying with "
            "this key will not help: look up the result instead."
        ) from None
