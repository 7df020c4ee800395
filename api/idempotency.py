"""Idempotent replay (spec "Common rules" 1; decisions in docs/request-safety.md).

A POST with `Idempotency-Key` claims the key in one short transaction before the view runs,
so two requests with one key can never both do the work; the view then runs outside any
transaction of ours (services commit their own). A view whose service commits work (a
payment, a refund) passes the claim to the service, with the pure function that makes the
answer's bytes from its result: the service stores them (`answer_store`) in the transaction
that commits the work, so the work and its answer commit together (a committed decline and
its 402 included). Other views' responses are stored in a second short write after the view.
A payment create's claim is deferred instead (`idempotency_defer`): its step 1's statement
writes it (`claim_within`), a round trip and a transaction fewer; a create answered before
its step 1 claims its key before its answer is stored (api.views).

2xx and 4xx are final and replayed byte for byte for 24 hours; a 5xx (or a crash) frees the
claim so a retry runs again; a 429 is never stored. Work is fenced by the claim: a request
whose key a retry took over (lease over) can commit neither work nor answer.
"""

import datetime
import functools
import hashlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.http import HttpResponse
from django.utils import timezone

from api.errors import IdempotencyFailed, ServiceError, ValidationFailed
from api.logfilters import redact_log_text
from api.models import IdempotencyRecord
from api.renderers import dumps
from api.replay import BodyCipher
from infra import failpoints, revision
from infra.deferred import DeferredWrites
from infra.keyed import by_key, keyed_cursor
from infra.retention import purge_rows
from infra.rows import Columns, chained, changed_a_row, insert_rows, insert_sql, prepared

log = logging.getLogger("api.idempotency")

KEY_HEADER = "HTTP_IDEMPOTENCY_KEY"
KEY_MAX_LENGTH = 255
REPLAY_WINDOW = datetime.timedelta(hours=24)
# An error answer is an envelope of bounded fields (api.errors: a message of at most 500
# characters quoting at most 40 of a value), a few hundred bytes. A larger one would be a
# message quoting input whole again (issue 20: 261 kB per request, kept 24 hours); it is not
# kept: the claim is released instead, and a retry gets the same 4xx by validating again.
MAX_STORED_ERROR_BYTES = 4096


@dataclass(frozen=True)
class Answer:
    """A response's bytes, made by a pure function of a service's result (no DRF machinery,
    so the same inside the work's transaction as after it): what is sent and stored."""

    status: int
    body: bytes
    content_type: str = "application/json; charset=utf-8"
    error: ServiceError | None = None  # the error it reports, counted when sent (not stored)


Render = Callable[[object, str], Answer]  # (a service's result, the request id) -> its answer


def error_answer(error: ServiceError, request_id: str) -> Answer:
    """The error envelope, as api.errors.exception_handler renders it."""
    return Answer(error.status, dumps(error.envelope(request_id)), error=error)


@dataclass(eq=False)  # one request's claim: hashed by identity (infra.deferred keys)
class Claim:
    """The right to run the request and store its response, passed to the service that does
    its work. `resumed`: the same request was claimed before by a request that died (lease
    over); work it started may be resumed. `render`: the view's pure function making the
    answer's bytes from the service's result, stored with the work (answer_store), which
    then sets `stored`."""

    record_id: int | None  # None while deferred
    lease_token: str
    request_id: str
    resumed: bool = False
    render: Render | None = None
    stored: Answer | None = None
    written: Answer | None = None  # stored by the work's statement, its transaction not ended
    # A deferred claim's record, not written yet: the statement that starts the work writes
    # it (claim_within), or the view claims the key when the work cannot (idempotency_claim).
    deferred_row: dict | None = None

    @property
    def deferred(self) -> bool:
        return self.deferred_row is not None


class KeyNotClaimed(Exception):
    """The statement that was to write a deferred claim wrote nothing (a record holds the key
    already, or the configuration revision it assumed moved): the request claims its key as
    any other does, and runs again (api.views.ServiceAPIView.run_claimed)."""


def idempotency_key(request) -> str | None:
    """The header's value; None when absent. 1-255 printable ASCII characters."""
    key = request.META.get(KEY_HEADER)
    if key is None:
        return None
    if not 0 < len(key) <= KEY_MAX_LENGTH or not key.isascii() or not key.isprintable():
        raise ValidationFailed(
            f"Idempotency-Key must be 1 to {KEY_MAX_LENGTH} printable ASCII characters.",
            param="Idempotency-Key",
        )
    return key


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def request_fingerprint(method: str, path: str, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode(), body):
        digest.update(len(part).to_bytes(8, "big") + part)  # length-prefixed: no ambiguity
    return digest.hexdigest()


def _lease_until(now: datetime.datetime) -> datetime.datetime:
    return now + datetime.timedelta(seconds=settings.IDEMPOTENCY_LEASE_SECONDS)


def _fresh_claim(now: datetime.datetime, **request) -> dict:
    return {
        **request,
        "lease_token": secrets.token_hex(16),
        "lease_until": _lease_until(now),
        "status": None,
        "content_type": "",
        "body": b"",
        "created": now,
        "expires_at": now + REPLAY_WINDOW,
    }


def _key_is_free(record: IdempotencyRecord, now: datetime.datetime) -> bool:
    """Past its 24 hours, or held by a request that died before answering (lease over)."""
    return record.expires_at <= now or (record.in_flight and record.lease_until <= now)


def _scope_and_fresh(
    now, *, merchant_id: str, livemode: bool, key: str, method: str, path: str, body: bytes,
    request_id: str,
) -> tuple[dict, dict]:  # fmt: skip
    """The key's record: what names it (scope) and what a claim writes in it (fresh)."""
    fresh = _fresh_claim(
        now,
        fingerprint=request_fingerprint(method, path, body),
        method=method,
        path=redact_log_text(path)[:2048],
        request_id=request_id,
    )
    return {"merchant_id": merchant_id, "livemode": livemode, "key_hash": _sha256(key)}, fresh


def idempotency_defer(**request) -> Claim:
    """A claim of the key (`request` as idempotency_claim takes it) that writes nothing yet:
    the statement that starts the request's work writes it (claim_within), so a create spends
    no round trip and no transaction of its own on it. A request that answers before its
    work starts claims the key then, as any other (api.views)."""
    scope, fresh = _scope_and_fresh(timezone.now(), **request)
    return Claim(None, fresh["lease_token"], request["request_id"], deferred_row=scope | fresh)


def idempotency_claim(**request) -> Claim | IdempotencyRecord:
    """A Claim to run the request (`merchant_id`, `livemode`, `key`, `method`, `path`,
    `body`, `request_id`), or the completed record to replay.

    Raises 409 `idempotency_key_conflict` for another request under the key and
    `idempotency_key_in_use` while its first request runs.
    """
    now = timezone.now()
    scope, fresh = _scope_and_fresh(now, **request)
    fingerprint, request_id = fresh["fingerprint"], request["request_id"]
    record_id = _insert_if_new({**scope, **fresh})
    if record_id is not None:
        return Claim(record_id, fresh["lease_token"], request_id)
    with transaction.atomic():
        # The unique constraint makes a second INSERT wait for the first claim's commit and
        # then fail; get_or_create then reads (and locks) the winner's row.
        record, created = IdempotencyRecord.objects.select_for_update().get_or_create(
            **scope, defaults=fresh
        )
        resumed = False
        if not created and _key_is_free(record, now):
            # The same request again after its first run died: what it started is resumed.
            resumed = record.in_flight and record.fingerprint == fingerprint
            for field, value in fresh.items():
                setattr(record, field, value)
            record.save()
            created = True
    if created:
        return Claim(record.pk, record.lease_token, request_id, resumed=resumed)
    if record.fingerprint != fingerprint:
        raise IdempotencyFailed(
            "This Idempotency-Key was already used with a different request (method, path "
            "or body); use a new key for a new request.",
            code="idempotency_key_conflict",
        )
    if record.in_flight:
        raise IdempotencyFailed(
            "A request with this Idempotency-Key is still being processed; retry shortly.",
            code="idempotency_key_in_use",
        )
    return record


def _insert_if_new(values: dict) -> int | None:
    """The common case, a new key, in one round trip: INSERT ... ON CONFLICT DO NOTHING
    RETURNING id (PostgreSQL and SQLite alike). None when a record already holds the key; a
    concurrent uncommitted claim makes this wait for it, like any insert on a unique key.

    The claim commits without waiting for the disk (`async_commit`): a server crash can lose
    only a claim that nothing durable followed, since the request's own commits (its work,
    its stored response) flush the claim first; a lost claim just frees the key for a retry.
    That spares each idempotent request one of its three waits for a WAL flush.

    A request that took its key from the key cache without reading the configuration
    revision (infra.revision.assume) has it read here, in the same statement, the row written
    only if it is the one assumed: a round trip fewer. Raises revision.Moved (nothing
    written) when it is not."""
    if revision.assumed() is None:
        returned = insert_rows(IdempotencyRecord, [values], **_CLAIM_INSERT, keyed=True)
        return returned[0][0] if returned else None
    claimed, read = _claim_part(values, async_commit=True)
    with keyed_cursor() as cursor:
        cursor.execute(*chained([claimed], [(f"SELECT {read}", [])]))
        record_id, current = cursor.fetchone()
    if not revision.confirm(current):
        raise revision.Moved()
    return record_id


_CLAIM_INSERT = {"suffix": "ON CONFLICT DO NOTHING RETURNING id", "async_commit": True}


def _claim_part(values: dict, *, async_commit: bool = False) -> tuple[tuple[str, str, list], str]:
    """The WITH part `claimed` that inserts the key's record unless one holds the key (and,
    under an assumed configuration revision, only if it is still the one assumed), and the
    two columns that read it: the record's id (NULL: nothing written) and the revision (NULL
    when none was assumed)."""
    assumed = revision.assumed()
    tail = None if assumed is None else f"WHERE ({revision.SQL}) = %s"
    insert, params = insert_sql(
        IdempotencyRecord, [values], **{**_CLAIM_INSERT, "async_commit": async_commit},
        select_tail=tail,
    )  # fmt: skip
    current = "NULL" if assumed is None else f"({revision.SQL})"
    claimed = ("claimed", insert, params if assumed is None else [*params, assumed])
    return claimed, f"(SELECT id FROM claimed), {current}"


def claim_within(claim: Claim) -> tuple[tuple[str, str, list], str]:
    """For the statement that starts a deferred claim's work: the WITH part `claimed` writing
    its record (its parts after it write only if `claimed` returned a row) and the two columns
    its answer reads for claim_written. On PostgreSQL."""
    return _claim_part(claim.deferred_row)


def claim_written(claim: Claim, record_id: int | None, current: int | None) -> None:
    """What the statement of claim_within read: the claim is now the key's record's, the
    configuration revision it assumed confirmed. Raises KeyNotClaimed when nothing was
    written (the statement wrote nothing else either)."""
    if record_id is None:
        raise KeyNotClaimed()
    if revision.assumed() is not None:
        revision.confirm(current)  # written only if it is the one assumed
    claim.record_id, claim.deferred_row = record_id, None


def is_final(status: int) -> bool:
    """2xx and 4xx answers are final and replayed; a 5xx may be retried; a 429 said nothing
    about the request itself."""
    return status < 500 and status != 429


def idempotency_settle(
    claim: Claim, response: HttpResponse, cipher: BodyCipher | None = None
) -> None:
    """Store a final response under the claim (its body encrypted by `cipher`, if given), or
    release the claim for a retry."""
    status, content = response.status_code, response.content
    if not is_final(status) or _too_large_to_keep(claim, status, content):
        idempotency_release(claim)
        return
    failpoints.reach(failpoints.RESPONSE_STORING)
    body = content if cipher is None else cipher.encrypt(content)
    if not _store_response(claim, status, response["Content-Type"], body):
        log.warning("idempotency claim %s was taken over before its response", claim.record_id)


def taken_over() -> IdempotencyFailed:
    return IdempotencyFailed(
        "A retry with this Idempotency-Key took over while this request ran; its answer is "
        "the retry's.",
        code="idempotency_key_in_use",
    )


def claim_holding(claim: Claim) -> tuple[str, list]:
    """-> (sql, params) of the UPDATE that renews the claim's lease while this request still
    holds its key: the fence a connector operation's start is inserted behind
    (infra.rows.insert_instances_if), so a request a retry took over starts nothing."""
    return _update_held(claim, lease_until=_lease_until(timezone.now()))


def answer_store(claim: Claim | None, result) -> None:
    """Inside the transaction that completes the request's work: the answer to `result` (the
    claim's `render` of it, or the refusal it is, a ServiceError as a value) stored under
    the claim, so the work and its answer commit together, or neither (a request whose key a
    retry took over gets 409 and its work rolls back). Nothing without a claim; an answer
    not to keep is left to the view's settle; an answer the work's own statement wrote
    (`answer_written`) is only noted."""
    if claim is not None and claim.written is not None:
        claim.stored, claim.written = claim.written, None
        return
    storing = answer_storing(claim, result)
    if storing is None:
        return
    answer, store = storing
    if not changed_a_row(store):
        raise taken_over()
    claim.stored = answer


def answer_storing(claim: Claim | None, result) -> tuple[Answer, tuple[str, list]] | None:
    """The answer to keep for `result` and the UPDATE (sql, params, ending in its WHERE) that
    stores it while the claim holds its record; None when there is nothing to store. For a
    work that stores its answer in its own statement (payments.steps: the create's), then
    calls answer_written."""
    if claim is None or claim.render is None:
        return None
    if isinstance(result, ServiceError):
        answer = error_answer(result, claim.request_id)
    else:
        answer = claim.render(result, claim.request_id)
    if not is_final(answer.status) or _too_large_to_keep(claim, answer.status, answer.body):
        return None
    values = {"status": answer.status, "content_type": answer.content_type, "body": answer.body}
    return answer, _update_held(claim, **values)


def answer_written(claim: Claim, answer: Answer, written: bool) -> None:
    """The work's statement ran answer_storing's UPDATE, which `written` says changed the
    record: the answer is noted for answer_store at the transaction's end; else a retry took
    over the claim (409, the work rolls back)."""
    if not written:
        raise taken_over()
    claim.written = answer


def _too_large_to_keep(claim: Claim, status: int, body: bytes) -> bool:
    """An error answer past MAX_STORED_ERROR_BYTES, logged: a bug to fix, not to store."""
    size = len(body)
    if status < 400 or size <= MAX_STORED_ERROR_BYTES:
        return False
    log.error(
        "idempotency claim %s: a %s answer of %s bytes is over %s and not stored",
        claim.record_id,
        status,
        size,
        MAX_STORED_ERROR_BYTES,
    )
    return True


@functools.cache
def _update_held_sql(*fields: str) -> str:
    """The UPDATE of `fields` of the record a claim holds (its id and lease token, and no
    response stored yet), by hand: these run on every idempotent request, and the ORM would
    spend longer compiling one than running it. Parameters: the values, the id, the token."""
    r = Columns(IdempotencyRecord)
    assignments = ", ".join(f"{getattr(r, field)} = %s" for field in fields)
    held = by_key(r.id, f"{r.lease_token} = %s", f"{r.status} IS NULL")
    return f"UPDATE {r.table} SET {assignments} WHERE {held}"


def _update_held(claim: Claim, **values) -> tuple[str, list]:
    """-> (sql, params) setting `values` (prepared as save() would) on the claim's record while
    the claim holds it."""
    field, db = IdempotencyRecord._meta.get_field, connections[DEFAULT_DB_ALIAS]
    params = [prepared(field(name), value, db) for name, value in values.items()]
    return _update_held_sql(*values), [*params, claim.record_id, claim.lease_token]


def _store_response(claim: Claim, status: int, content_type: str, body: bytes) -> bool:
    """The response stored under the claim; False when the claim was taken over."""
    store = _update_held(claim, status=status, content_type=content_type, body=body)
    return changed_a_row(store)


def idempotency_release(claim: Claim) -> None:
    """The request died or answered 5xx: the key is free for a retry at once. The record stays
    (lease over), so the retry takes over the same record and resumes what it started.

    When the database cannot be reached (an outage, likely the 5xx's cause too), the release
    is retried in the background until it succeeds or the lease ends on its own: the key is
    free within DEPENDENCY_RETRY_SECONDS of the database's return, not a lease later."""
    try:
        _release(claim)
    except DatabaseError:
        log.warning("idempotency claim %s: release failed, retrying", claim.record_id)
        lease = settings.IDEMPOTENCY_LEASE_SECONDS  # after it, the key is free anyway
        _late_releases.add(claim, functools.partial(_release, claim), lease)


def _release(claim: Claim) -> None:
    failpoints.reach(failpoints.RELEASING)
    changed_a_row(_update_held(claim, lease_until=timezone.now()))


_late_releases = DeferredWrites("idempotency-releases")


def idempotency_records_purge() -> int:
    """Deletes records past their 24-hour window, in batches; returns how many."""
    expired = IdempotencyRecord.objects.filter(expires_at__lte=timezone.now())
    return purge_rows(expired, order="expires_at")
