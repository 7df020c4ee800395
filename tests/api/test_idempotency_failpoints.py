"""A retry never gets a different answer than the work that committed (docs/request-safety.md
"Idempotency keys"): the process is killed at each step of an idempotent payment request
(infra.failpoints), the key's release failing too (a database drop), and the retry after the
lease gets the original answer or runs the request exactly once, on PostgreSQL."""

import datetime

import pytest
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

from api import idempotency
from api.models import IdempotencyRecord
from events.models import Event
from infra import failpoints
from infra.failpoints import armed
from payments.models import Operation, Payment, Token
from refunds.models import Refund
from tests.e2e.processes import wait_for
from tests.payments.support import APPROVED, INSUFFICIENT_FUNDS, create, payment_body, tokenize
from tests.support.connectors import Crash, RecordingSimulator

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

STEPS = [
    failpoints.CLAIMED,
    failpoints.OPERATION_STARTED,
    failpoints.CONNECTOR_ANSWERED,
    failpoints.WORK_COMMITTED,
]


@pytest.fixture
def connector(settings):
    settings.PAYMENT_CONNECTORS = {"test": "tests.support.connectors.RecordingSimulator"}
    RecordingSimulator.calls, RecordingSimulator.crash_after = [], set()
    return RecordingSimulator


def post(api, path, body, key="k1"):
    return api.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def killed_at(step: str, api, path: str, body: dict) -> None:
    """The request dies at `step`, and so does the key's release (the database is gone)."""
    with armed(step, Crash), armed(failpoints.RELEASING, Crash), pytest.raises(Crash):
        post(api, path, body)


def after_the_lease(time_machine) -> None:
    lease = datetime.timedelta(seconds=settings.IDEMPOTENCY_LEASE_SECONDS + 1)
    time_machine.move_to(timezone.now() + lease)


@pytest.mark.parametrize("number, status", [(APPROVED, 201), (INSUFFICIENT_FUNDS, 402)])
def test_a_create_killed_before_its_step_1_claimed_nothing_and_its_retry_runs_at_once(
    api, connector, number, status
):
    """A create's key is claimed by its step 1's statement (api.idempotency.claim_within):
    killed before it, the request wrote nothing, so its retry runs at once, with no lease to
    wait out, and is replayed after that."""
    token = tokenize(api, number)
    body = payment_body(token)
    killed_at(failpoints.CLAIMED, api, "/v1/payments", body)
    assert not IdempotencyRecord.objects.exists() and not Operation.objects.exists()

    retry = post(api, "/v1/payments", body)

    assert retry.status_code == status and "Idempotent-Replayed" not in retry, retry.content
    assert Payment.objects.get().token_id == token
    assert len({key for _, key, _ in connector.calls}) == 1
    replay = post(api, "/v1/payments", body)
    assert (replay.status_code, replay["Idempotent-Replayed"]) == (status, "true")
    assert replay.content == retry.content


@pytest.mark.parametrize("step", STEPS[1:])
@pytest.mark.parametrize("number, status", [(APPROVED, 201), (INSUFFICIENT_FUNDS, 402)])
def test_a_create_killed_at_any_step_answers_its_retry_as_it_committed(
    api, connector, time_machine, step, number, status
):
    token = tokenize(api, number)
    body = payment_body(token)
    killed_at(step, api, "/v1/payments", body)
    at_once = post(api, "/v1/payments", body)
    if step == failpoints.WORK_COMMITTED:  # the answer committed with the work
        assert (at_once.status_code, at_once["Idempotent-Replayed"]) == (status, "true")
    else:
        assert at_once.json()["error"]["code"] == "idempotency_key_in_use"

    after_the_lease(time_machine)
    retry = post(api, "/v1/payments", body)

    assert retry.status_code == status, retry.content  # never 400 token_invalid
    (payment,) = Payment.objects.all()
    assert payment.token_id == token
    if status == 201:
        assert retry.json()["id"] == payment.pk
    else:  # the committed decline replays as the same 402
        assert retry.json()["error"]["decline_code"] == "insufficient_funds"
        assert payment.pk in retry.json()["error"]["message"]
    # The answer was stored with the work: a retry after the work's commit is a replay.
    assert ("Idempotent-Replayed" in retry) == (step == failpoints.WORK_COMMITTED)
    assert Event.objects.filter(type="payment.created").count() == 1
    # The processor was asked about one operation only (again, with its key, on resume).
    assert len({key for _, key, _ in connector.calls}) == 1
    replay = post(api, "/v1/payments", body)
    assert (replay.status_code, replay.content) == (retry.status_code, retry.content)


@pytest.mark.parametrize("step", STEPS[1:])
def test_a_capture_killed_at_any_step_captures_once(api, connector, time_machine, step):
    pid = create(api, capture_method="manual").json()["id"]
    path = f"/v1/payments/{pid}/captures"
    killed_at(step, api, path, {"amount": 600})

    after_the_lease(time_machine)
    retry = post(api, path, {"amount": 600})

    assert retry.status_code == 200, retry.content
    assert (retry.json()["status"], retry.json()["amount_captured"]) == ("captured", 600)
    assert Event.objects.filter(resource_id=pid, type="payment.partially_captured").count() == 1
    assert [name for name, _, _ in connector.calls].count("capture") in (1, 2)
    assert Operation.objects.filter(kind="capture").count() == 1


def test_a_refused_capture_killed_before_its_answer_replays_the_same_422(
    api, connector, time_machine
):
    pid = create(api, capture_method="manual", metadata={"_svc_test_refuse_capture": True})
    path = f"/v1/payments/{pid.json()['id']}/captures"
    killed_at(failpoints.WORK_COMMITTED, api, path, {})
    after_the_lease(time_machine)
    retry = post(api, path, {})
    assert retry.status_code == 422 and retry["Idempotent-Replayed"] == "true"
    assert retry.json()["error"]["code"] == "capture_failed"
    assert Event.objects.filter(type="payment.capture_failed").count() == 1


@pytest.mark.parametrize("step", STEPS[1:])
def test_a_refund_killed_at_any_step_refunds_once(api, connector, time_machine, step):
    pid = create(api).json()["id"]
    path = f"/v1/payments/{pid}/refunds"
    killed_at(step, api, path, {"amount": 250})

    after_the_lease(time_machine)
    retry = post(api, path, {"amount": 250})

    assert retry.status_code == 201, retry.content
    (refund,) = Refund.objects.all()
    assert (retry.json()["id"], refund.amount) == (refund.pk, 250)
    assert Payment.objects.get(pk=pid).amount_refunded == 250


def test_a_create_whose_key_another_request_claimed_before_its_step_1_answers_as_that_one(
    api, connector
):
    """Between a create's validation and its step 1 (whose statement was to claim its key,
    and writes nothing: key, token or operation) a retry claims the key and answers: the
    first request then claims the key as any request does and gets the retry's answer,
    replayed. One payment, one operation."""
    body = payment_body(tokenize(api))
    retried = []

    def retry_meanwhile():
        with armed(failpoints.CLAIMED, lambda: None):
            retried.append(post(api, "/v1/payments", body))

    with armed(failpoints.CLAIMED, retry_meanwhile):
        first = post(api, "/v1/payments", body)

    (retry,) = retried
    assert retry.status_code == 201 and "Idempotent-Replayed" not in retry, retry.content
    assert (first.status_code, first["Idempotent-Replayed"]) == (201, "true")
    assert first.content == retry.content
    assert Payment.objects.get().pk == retry.json()["id"]
    assert Operation.objects.count() == 1 and len(connector.calls) == 1


def test_a_request_whose_key_was_taken_over_commits_nothing(api, connector, time_machine):
    """The first request's lease runs out while it waits on the processor, and its retry
    takes over, resumes its operation and answers: the first request's answer is refused,
    409, and it writes nothing."""
    token = tokenize(api)
    body = payment_body(token)
    retried = []
    step = failpoints.CONNECTOR_ANSWERED

    def retry_meanwhile():
        after_the_lease(time_machine)
        with armed(step, lambda: None):
            retried.append(post(api, "/v1/payments", body))

    with armed(step, retry_meanwhile):
        first = post(api, "/v1/payments", body)

    (retry,) = retried
    assert retry.status_code == 201, retry.content
    assert first.status_code == 409, first.content
    assert first.json()["error"]["code"] == "idempotency_key_in_use"
    assert Payment.objects.get().pk == retry.json()["id"]
    assert Operation.objects.count() == 1
    assert IdempotencyRecord.objects.get().status == 201
    assert post(api, "/v1/payments", body).content == retry.content


def test_a_5xx_frees_the_key_at_once_and_the_retry_runs_again(api, connector):
    token = tokenize(api)
    failing = payment_body(token, metadata={"_svc_test_http_error": 503})
    assert post(api, "/v1/payments", failing).status_code == 503
    assert Token.objects.get(pk=token).used_at is None
    retry = post(api, "/v1/payments", failing)
    assert retry.status_code == 503  # ran again (not 409 in use), and failed again
    assert Operation.objects.filter(state="abandoned").count() == 2


def test_a_key_whose_release_met_the_database_down_is_free_once_it_returns(
    api, connector, settings
):
    """A request fails on a database outage (5xx) and its release fails with it: the release
    is retried in the background (infra/deferred.py), so the key is free as soon as the
    database is back, not a lease later."""
    settings.DEPENDENCY_RETRY_SECONDS = 0.05
    pid = create(api, capture_method="manual").json()["id"]
    path = f"/v1/payments/{pid}/captures"  # claimed before its handler (a create: by step 1)
    database_down = OperationalError("the connection is closed")
    with armed(failpoints.CLAIMED, database_down), armed(failpoints.RELEASING, database_down):
        failed = post(api, path, {})
        assert failed.status_code == 500
        assert idempotency._late_releases.pending() == 1
        during = post(api, path, {})  # the database is still down for releases
        assert during.json()["error"]["code"] == "idempotency_key_in_use"

    wait_for(lambda: idempotency._late_releases.pending() == 0)
    retry = post(api, path, {})
    assert retry.status_code == 200, retry.content
    assert retry.json()["status"] == "captured"
