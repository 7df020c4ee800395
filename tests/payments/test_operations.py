"""Connector operations (docs/payments.md "Connector operations"): every connector call is
made with no transaction open, recorded before it is made, and recovered with the same key
when the process dies between the call and writing its answer."""

import datetime

import pytest
from django.db import connection
from django.utils import timezone
from psycopg._queries import MAX_CACHED_STATEMENT_PARAMS

from events.models import Event
from payments import services, tasks
from payments.methods import get_method
from payments.models import Operation, Payment, Token
from payments.tokens import card_of
from refunds import tasks as refund_tasks
from refunds.models import Refund
from refunds.services import refund_create
from tests.payments.support import (
    ASYNC,
    CHALLENGE,
    create,
    event_types,
    payment_body,
    tokenize,
)
from tests.support.connectors import Crash, RecordingSimulator

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def connector(settings):
    settings.PAYMENT_CONNECTORS = {"test": "tests.support.connectors.RecordingSimulator"}
    RecordingSimulator.calls, RecordingSimulator.crash_after = [], set()
    return RecordingSimulator


def post(api, path, body=None):
    response = api.post(path, body or {}, format="json")
    assert response.status_code < 300, response.content
    return response.json()


def test_no_connector_call_runs_inside_a_transaction(api, connector):
    manual = create(api, capture_method="manual").json()
    post(api, f"/v1/payments/{manual['id']}/captures")
    post(api, f"/v1/payments/{manual['id']}/refunds", {"amount": 400})
    voided = create(api, capture_method="manual").json()
    post(api, f"/v1/payments/{voided['id']}/cancel")
    pending = create(api, None).json()
    body = {"payment_method": {"type": "card", "token": tokenize(api)}}
    post(api, f"/v1/payments/{pending['id']}/confirm", body)
    slow = create(api, ASYNC).json()
    post(api, f"/v1/sandbox/advance/{slow['id']}")

    names = [name for name, _, _ in connector.calls]
    assert names == ["authorize", "capture", "refund", "authorize", "void"] + [
        "authorize",
        "authorize",
        "resolve",
    ]
    assert not any(in_transaction for _, _, in_transaction in connector.calls)
    keys = [key for _, key, _ in connector.calls]
    assert len(set(keys)) == len(keys)
    assert set(Operation.objects.values_list("state", flat=True)) == {"applied"}


def test_the_payer_action_asks_the_connector_outside_any_transaction(api, client, connector):
    payment = create(api, CHALLENGE).json()
    session = payment["next_action"]["redirect"]["url"].rsplit("/", 1)[-1]
    response = client.post(f"/sandbox/challenge/{session}", {"action": "approve"})
    assert response.status_code in (200, 302), response.content
    assert Payment.objects.get(pk=payment["id"]).status == "captured"
    assert [(name, in_tx) for name, _, in_tx in connector.calls][-1] == ("complete_action", False)


def test_a_capture_whose_process_died_is_recovered_with_the_same_key(api, connector, time_machine):
    payment = create(api, capture_method="manual").json()
    connector.crash_after = {"capture"}
    with pytest.raises(Crash):
        api.post(f"/v1/payments/{payment['id']}/captures", {}, format="json")
    (operation,) = Operation.objects.filter(kind="capture")
    assert operation.state == "started"
    assert Payment.objects.get(pk=payment["id"]).status == "authorized"
    # Busy meanwhile: nothing else reaches the connector for this payment.
    refused = api.post(f"/v1/payments/{payment['id']}/cancel", {}, format="json")
    assert refused.json()["error"]["code"] == "payment_in_progress"

    connector.crash_after = set()
    assert tasks.recover_operations() == 0  # too young: its request may still be running
    time_machine.move_to(timezone.now() + datetime.timedelta(seconds=61))
    assert tasks.recover_operations() == 1

    assert [call[:2] for call in connector.calls[-2:]] == [("capture", operation.pk)] * 2
    recovered = Payment.objects.get(pk=payment["id"])
    assert (recovered.status, recovered.amount_captured) == ("captured", 1000)
    assert Event.objects.filter(resource_id=payment["id"], type="payment.captured").count() == 1
    operation.refresh_from_db()
    assert operation.state == "applied"


def test_a_create_whose_process_died_is_recovered_into_the_payment(
    api, merchant, connector, time_machine
):
    token = tokenize(api)
    connector.crash_after = {"authorize"}
    with pytest.raises(Crash):
        services.payment_create(
            merchant=merchant,
            livemode=False,
            amount=1000,
            currency="eur",
            reference="order-1",
            method_type="card",
            token_id=token,
        )
    (operation,) = Operation.objects.all()
    assert not Payment.objects.exists()
    assert Token.objects.get(pk=token).used_at is not None  # spent by step 1

    connector.crash_after = set()
    time_machine.move_to(timezone.now() + datetime.timedelta(seconds=61))
    assert tasks.recover_operations() == 1

    payment = Payment.objects.get(pk=operation.payment_id)
    assert (payment.status, payment.token_id, payment.amount_captured) == ("captured", token, 1000)
    assert payment.card == card_of(Token.objects.get(pk=token), get_method("card"))  # re-read
    assert payment.created == operation.created  # its request's moment, not the recovery's
    assert event_types(payment.pk) == ["payment.created", "payment.captured"]
    assert [call[:2] for call in connector.calls] == [("authorize", operation.pk)] * 2


def test_a_refund_whose_process_died_is_recovered_once(api, connector, time_machine):
    payment = Payment.objects.get(pk=create(api).json()["id"])
    connector.crash_after = {"refund"}
    with pytest.raises(Crash):
        refund_create(payment=payment, amount=300)
    assert not Refund.objects.exists()

    connector.crash_after = set()
    time_machine.move_to(timezone.now() + datetime.timedelta(seconds=61))
    assert tasks.recover_operations() == 0  # refunds are the refunds room's
    assert refund_tasks.recover_refund_operations() == 1
    (refund,) = Refund.objects.all()
    assert (refund.status, refund.amount) == ("succeeded", 300)
    assert Payment.objects.get(pk=payment.pk).amount_refunded == 300


def test_a_connector_that_could_not_be_asked_abandons_the_operation(api, connector):
    token = tokenize(api)
    body = payment_body(token, metadata={"_svc_test_http_error": 503})
    response = api.post("/v1/payments", body, format="json")
    assert response.status_code == 503
    assert list(Operation.objects.values_list("state", flat=True)) == ["abandoned"]
    assert Token.objects.get(pk=token).used_at is None  # given back for a retry


@pytest.mark.postgres
def test_a_create_chains_its_operation_into_statements_it_runs_anyway(api):
    """Step 1's operation row goes in the statement that checks the Idempotency-Key claim, and
    step 3 marks it applied in the one that inserts the payment and its events: the operation
    costs a create no round trip of its own (docs/payments.md "Benchmark")."""
    body = payment_body(tokenize(api))
    statements = []
    with connection.execute_wrapper(
        lambda run, sql, params, *rest: statements.append((sql, params)) or run(sql, params, *rest)
    ):
        response = api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert response.status_code == 201, response.content
    (start, _), (apply, apply_params) = [s for s in statements if '"payments_operation"' in s[0]]
    assert '"api_idempotencyrecord"' in start
    assert '"payments_payment"' in apply and '"events_event"' in apply
    # Beyond this psycopg parses the statement's text again on every run (~0.2 ms a create).
    assert len(apply_params) <= MAX_CACHED_STATEMENT_PARAMS
    assert Operation.objects.get().state == "applied"


@pytest.mark.postgres
@pytest.mark.parametrize("key", ["k-1", None])
def test_a_create_takes_its_token_and_starts_its_operation_in_one_statement(api, key):
    """Step 1 is one statement run in autocommit, its own transaction: the claim's lease (with
    a key), the token taken and the operation inserted, with no BEGIN or COMMIT of its own
    (docs/payments.md "Where a create's CPU goes")."""
    token = tokenize(api)
    body = payment_body(token)
    seen = []

    def note(run, sql, params, many, context):
        seen.append((sql, context["connection"].get_autocommit()))
        return run(sql, params, many, context)

    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    with connection.execute_wrapper(note):
        response = api.post("/v1/payments", body, format="json", **headers)
    assert response.status_code == 201, response.content
    ((step_1, autocommit),) = [(sql, auto) for sql, auto in seen if '"payments_token"' in sql]
    assert autocommit
    assert '"payments_operation"' in step_1
    assert ('"api_idempotencyrecord"' in step_1) is (key is not None)
    assert Token.objects.get(pk=token).used_at is not None
    assert Operation.objects.get().request.get("card") is None  # the token's, read again


@pytest.mark.postgres
def test_a_refused_token_starts_no_operation(api):
    token = tokenize(api)
    assert api.post("/v1/payments", payment_body(token), format="json").status_code == 201
    again = api.post("/v1/payments", payment_body(token), format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert again.status_code == 400, again.content
    assert again.json()["error"]["code"] == "token_invalid"
    assert "already been used" in again.json()["error"]["message"]
    assert Operation.objects.count() == 1
