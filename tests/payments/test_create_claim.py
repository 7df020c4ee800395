"""A create's Idempotency-Key is claimed by its step 1's statement on PostgreSQL
(api.idempotency.claim_within; docs/request-safety.md "Idempotency keys"): the claim, the
token and the operation, linked to the claim's record, in one round trip. A create answered
before its step 1 (a refusal) claims its key before its answer is stored, and the key's own
answer comes first, as when the key was claimed before the handler."""

import json

import pytest

from api.models import IdempotencyRecord
from infra import failpoints
from infra.failpoints import armed
from payments.models import Operation, Payment
from tests.api.test_idempotency_concurrency import THREADS, send_together
from tests.conftest import key_client
from tests.payments.support import payment_body, tokenize
from tests.payments.test_statement_shapes import statements_of

pytestmark = pytest.mark.postgres


def post(api, body, key="k1"):
    return api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


@pytest.mark.django_db
def test_a_keyed_create_claims_its_key_in_its_step_1_statement(api):
    body = payment_body(tokenize(api))
    statements = [sql for sql, _ in statements_of(lambda: post(api, body))]

    table = IdempotencyRecord._meta.db_table
    touching = [sql for sql in statements if table in sql]
    assert len(touching) == 2, touching  # step 1 writes the claim, step 3 the answer
    assert touching[0].startswith(f'WITH claimed AS (INSERT INTO "{table}"')
    record = IdempotencyRecord.objects.get()
    assert record.status == 201
    assert Operation.objects.get().idempotency_record_id == record.pk  # what a retry resumes
    assert post(api, body)["Idempotent-Replayed"] == "true"


@pytest.mark.django_db
def test_a_create_refused_before_its_step_1_answers_what_its_key_holds_first(api):
    body = payment_body(tokenize(api))
    assert post(api, body).status_code == 201

    refused = post(api, {**body, "amount": -1})  # another request, which is refused as well

    assert refused.status_code == 409, refused.content
    assert refused.json()["error"]["code"] == "idempotency_key_conflict"
    assert IdempotencyRecord.objects.get().status == 201
    assert post(api, body)["Idempotent-Replayed"] == "true"


@pytest.mark.django_db
def test_a_create_refused_before_its_step_1_stores_its_refusal_under_its_key(api):
    body = payment_body(tokenize(api), amount=-1)
    first = post(api, body)
    assert first.status_code == 400 and first.json()["error"]["param"] == "amount"

    again = post(api, body)

    assert (again.status_code, again["Idempotent-Replayed"]) == (400, "true")
    assert again.content == first.content
    assert IdempotencyRecord.objects.get().status == 400
    assert not Operation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_create_sent_again_while_its_first_runs_is_told_its_key_is_in_use(api):
    """The same create (its step 1 finds the key held: it claims it as any request, 409) and
    another one, refused (it claims the key before its refusal is answered: 409 too)."""
    body = payment_body(tokenize(api))
    during = []

    def send_meanwhile():
        during.append(post(api, body))
        during.append(post(api, {**body, "currency": "xyz"}))

    with armed(failpoints.CONNECTOR_ANSWERED, send_meanwhile):
        first = post(api, body)

    assert first.status_code == 201
    assert [response.status_code for response in during] == [409, 409]
    codes = [response.json()["error"]["code"] for response in during]
    assert codes == ["idempotency_key_in_use", "idempotency_key_conflict"]
    assert Payment.objects.count() == 1 and Operation.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_one_create_key_sent_at_once_creates_one_payment(new_merchant, settings):
    settings.API_RATE_LIMITS = {mode: {"rate": 1000.0, "burst": 1000} for mode in ("test", "live")}
    secret = new_merchant.keys["test"]["secret"].secret
    raw = json.dumps(payment_body(tokenize(key_client(secret)))).encode()

    responses = send_together(secret, raw, "race-create", THREADS, path="/v1/payments")

    originals = [r for r in responses if r.status_code != 409 and "Idempotent-Replayed" not in r]
    assert len(originals) == 1, [r.status_code for r in responses]
    (original,) = originals
    assert original.status_code == 201
    for response in responses:
        if response.status_code == 409:
            assert response.json()["error"]["code"] == "idempotency_key_in_use"
        elif response is not original:
            assert response.content == original.content
    assert Payment.objects.count() == 1 and Operation.objects.count() == 1
    assert IdempotencyRecord.objects.get().status == 201
