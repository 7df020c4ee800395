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
import threading
import time

from django.conf import settings
from django.db import DatabaseError, DataError, IntegrityError, models, transaction

from api.idempotency import KEY_HEADER
from api.ids import id_floor
from api.logfilters import redact_log_text
from api.models import RequestLogEntry
from api.replay import REPLAYED_HEADER
from api.request_log_bound import RefusedPublishableBound
from infra.background import BackgroundWriter
from infra.retention import purge_rows
from infra.rows import copy_rows

log = logging.getLogger("api.request")

API_PREFIX = "/v1/"
# Set by the sandbox on an answer its failure profile injected (docs/sandbox.md "Failure
# profiles"): kept with the entry, so the request log and the timeline tell it from a real one.
INJECTED_HEADER = "Svc-Test-Injected"
QUEUE_LIMIT = 10_000  # entries a process holds at most; the oldest are dropped beyond
BATCH = 500  # rows a COPY writes at most


def request_log_fields(request, response, duration_ms: float) -> dict:
    """The entry's facts; what the client wrote (method, path, idempotency key) redacted, the
    service's own values (ids, mode, status) as they are."""
    api_key = getattr(request, "api_key", None)
    fields = {
        "method": _redacted(request.method),
        "path": _redacted(request.path),
        "status": response.status_code,
        "merchant": getattr(api_key, "merchant_id", None),
        "key_id": getattr(api_key, "id", None),
        "mode": getattr(api_key, "mode", None),
        "request_id": getattr(request, "request_id", None),
        "idempotency_key": _redacted(request.META.get(KEY_HEADER)),
        "replayed": response.get(REPLAYED_HEADER) == "true",
        "duration_ms": round(duration_ms, 1),
    }
    if fields["replayed"]:
        fields["original_request_id"] = response["X-Request-Id"]
    if response.has_header(INJECTED_HEADER):
        fields["injected"] = response[INJECTED_HEADER]
    return fields


def _redacted(text: str | None) -> str | None:
    return None if text is None else redact_log_text(text)


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
        "path": fields["path"],
        "status": fields["status"],
        "error_type": str(error.get("type")) if error.get("type") else None,
        "error_code": str(error.get("code")) if error.get("code") else None,
        "idempotency_key": fields["idempotency_key"] or None,
        "replayed": fields["replayed"],
        "replay_of": fields.get("original_request_id"),
        "injected": fields.get("injected"),
        "api_version": getattr(request, "api_version", None),
        "duration_ms": fields["duration_ms"],
        "created": datetime.datetime.now(datetime.UTC),
    }


# What a text column holds at most, by field; the id is ours (a request id), never cut.
_WIDTHS = {
    field.attname: field.max_length
    for field in RequestLogEntry._meta.concrete_fields
    if isinstance(field, models.CharField) and not field.primary_key
}


def fitted(entry: dict) -> dict:
    """The entry as its columns take it: a client chooses the method, the path and the
    Idempotency-Key, and PostgreSQL refuses text longer than its column or holding NUL
    (`%00` in a path). NUL is written as the client sent it (`%00`), then the text is cut.
    In place: a queued entry is the writer's alone."""
    for name, width in _WIDTHS.items():
        value = entry.get(name)
        if isinstance(value, str) and (len(value) > width or "\x00" in value):
            entry[name] = value.replace("\x00", "%00")[:width]
    return entry


class RequestLogWriter:
    """A bounded queue of entries and the daemon thread that inserts them every
    REQUEST_LOG_FLUSH_SECONDS (0: no thread; `flush()` is called by whoever needs the rows,
    as the tests do)."""

    def __init__(self):
        self._queue: collections.deque = collections.deque(maxlen=QUEUE_LIMIT)
        self._lock = threading.Lock()
        self.dropped = 0
        self.refused_publishable = RefusedPublishableBound()
        self.background = BackgroundWriter("request-log", self._flush_round, _flush_interval)

    def keeps(self, request, entry: dict) -> bool:
        """Every entry but a publishable key's refusals past their bound (anyone may send
        those: api.request_log_bound)."""
        if entry["status"] < 400 or request.api_key.is_secret:
            return True
        return self.refused_publishable.keeps(entry)

    def add(self, entry: dict) -> None:
        with self._lock:
            if len(self._queue) == QUEUE_LIMIT:
                self.dropped += 1
            self._queue.append(entry)
        if settings.REQUEST_LOG_FLUSH_SECONDS:
            self.background.wake()

    def _flush_round(self) -> bool:
        self.flush()
        return True  # the thread lives as long as its process: requests keep coming

    def flush(self) -> int:
        """Inserts every queued entry; -> how many. What the database refuses is dropped and
        counted, never raised: the log must never hold up or fail what it records."""
        written = 0
        while True:
            with self._lock:
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
            if not batch:
                self._write_omitted()  # after the entries that carry the counts
                return written
            written += self._insert([fitted(entry) for entry in batch])

    def _write_omitted(self) -> None:
        for entry_id, omitted in self.refused_publishable.counts_to_write():
            try:
                with transaction.atomic():
                    RequestLogEntry.objects.filter(id=entry_id).update(omitted_after=omitted)
            except DatabaseError as exc:  # an outage: that count is lost with the entries
                log.warning("request log: %d left out not recorded (%s)", omitted, exc)

    def _insert(self, batch: list[dict]) -> int:
        try:
            with transaction.atomic():  # a savepoint for a caller inside a transaction
                copy_rows(RequestLogEntry, batch)
            return len(batch)
        except (DataError, IntegrityError) as exc:
            if len(batch) > 1:
                # One entry the database still refuses must cost no other merchant its
                # entries (issue 35): each one alone, so only the bad one is dropped.
                return sum(self._insert([entry]) for entry in batch)
            self.dropped += 1
            log.warning("request log: entry %s dropped (%s)", batch[0].get("id"), exc)
        except DatabaseError as exc:  # the database itself (an outage): the batch is lost
            self.dropped += len(batch)
            log.warning("request log: %d entries dropped (%s)", len(batch), exc)
        return 0

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
        self.refused_publishable.clear()


def _flush_interval() -> float:
    return settings.REQUEST_LOG_FLUSH_SECONDS


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
            if entry is not None and settings.REQUEST_LOG_ENABLED and writer.keeps(request, entry):
                writer.add(entry)
        return response
