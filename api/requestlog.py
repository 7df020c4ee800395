"""The request log: one structured line per API request, and the same facts kept per merchant
for `GET /v1/request-logs` (docs/request-log.md).

Two layers keep card numbers and keys out of the logs: the request log redacts its own fields
(card- and key-shaped strings) before logging them, and api.logfilters.RedactCardData redacts
every record before it is written.

The rows are written by a background thread of each process, in batches: a request only
appends its entry to a bounded in-memory queue, so writing the log adds no SQL to any request
and a database outage costs log entries (counted and logged), never a request. A process that
dies loses at most the entries of its last flush interval.
"""

import collections
import datetime
import json
import logging
import os
import threading
import time

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from api.idempotency import KEY_HEADER, REPLAYED_HEADER
from api.ids import id_floor
from api.logfilters import redact_log_text
from api.models import RequestLogEntry
from infra.retention import purge_rows
from infra.rows import insert_rows

log = logging.getLogger("api.request")

API_PREFIX = "/v1/"
QUEUE_LIMIT = 10_000  # entries a process holds at most; the oldest are dropped beyond
BATCH = 500  # rows a statement inserts at most


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


def _error_of(response) -> dict:
    """The envelope's type and code of an error answer (DRF's data, or the stored bytes of a
    replay or a middleware's answer)."""
    if response.status_code < 400:
        return {}
    data = getattr(response, "data", None)
    if data is None:
        try:
            data = json.loads(response.content)
        except (ValueError, AttributeError):
            return {}
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def entry_of(request, fields: dict, response) -> dict | None:
    """The row to keep, or None for a request no merchant made (no valid key)."""
    if fields["merchant"] is None:
        return None
    error = _error_of(response)
    return {
        "id": fields["request_id"],
        "merchant_id": fields["merchant"],
        "livemode": fields["mode"] == "live",
        "key_id": fields["key_id"],
        "method": fields["method"],
        "path": fields["path"][:2048],
        "status": fields["status"],
        "error_type": str(error.get("type"))[:32] if error.get("type") else None,
        "error_code": str(error.get("code"))[:64] if error.get("code") else None,
        "idempotency_key": (fields["idempotency_key"] or None) and fields["idempotency_key"][:255],
        "replayed": fields["replayed"],
        "api_version": getattr(request, "api_version", None),
        "duration_ms": fields["duration_ms"],
        "created": datetime.datetime.now(datetime.UTC),
    }


class RequestLogWriter:
    """A bounded queue of entries and the daemon thread that inserts them every
    REQUEST_LOG_FLUSH_SECONDS (0: no thread; `flush()` is called by whoever needs the rows,
    as the tests do)."""

    def __init__(self):
        self._queue: collections.deque = collections.deque(maxlen=QUEUE_LIMIT)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = None
        self.dropped = 0

    def add(self, entry: dict) -> None:
        with self._lock:
            if len(self._queue) == QUEUE_LIMIT:
                self.dropped += 1
            self._queue.append(entry)
            self._start_thread()

    def _start_thread(self) -> None:
        """Lazily, and again in a forked child (threads do not survive a fork)."""
        if not settings.REQUEST_LOG_FLUSH_SECONDS or self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="request-log", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(settings.REQUEST_LOG_FLUSH_SECONDS)
            try:
                self.flush()
            finally:
                connection.close()  # no pooled connection held between rounds

    def flush(self) -> int:
        """Inserts every queued entry; -> how many. On a database error the batch is dropped
        and counted: the log must never hold up or fail what it records."""
        written = 0
        while True:
            with self._lock:
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
            if not batch:
                return written
            try:
                with transaction.atomic():  # a savepoint for a caller inside a transaction
                    insert_rows(RequestLogEntry, batch, suffix="ON CONFLICT DO NOTHING")
                written += len(batch)
            except DatabaseError as exc:
                self.dropped += len(batch)
                log.warning("request log: %d entries dropped (%s)", len(batch), exc)

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()


writer = RequestLogWriter()


def request_log_purge() -> int:
    """Deletes entries older than REQUEST_LOG_RETENTION, oldest first by id (ids are
    time-ordered request ids); -> how many."""
    cutoff = datetime.datetime.now(datetime.UTC) - settings.REQUEST_LOG_RETENTION
    return purge_rows(RequestLogEntry.objects.filter(pk__lt=id_floor("req", cutoff)), order="pk")


class RequestLogMiddleware:
    """Sits just inside RequestIdMiddleware, so it sees the request id and the final status
    (500s included). Bodies are never logged."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        if request.path.startswith(API_PREFIX):
            fields = request_log_fields(request, response, (time.perf_counter() - started) * 1000)
            if log.isEnabledFor(logging.INFO):
                log.info(json.dumps(fields), extra={"request_log": fields})
            entry = entry_of(request, fields, response)
            if entry is not None and settings.REQUEST_LOG_ENABLED:
                writer.add(entry)
        return response
