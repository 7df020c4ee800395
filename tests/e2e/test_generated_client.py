"""A Python client generated from docs/openapi.yaml with openapi-python-client (README, "The
API's contract") runs a whole integration, typed, against the real web process: the flow of
the TypeScript client (tests/e2e/test_typescript_client.py)."""

import importlib
import os
import subprocess
import sys
import uuid

import pytest

from accounts.services import merchant_create
from tests.e2e.processes import ROOT, VENV_BIN, web_server

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def svc_client(tmp_path, monkeypatch):
    """The generated package, importable as `svc_client`."""
    result = subprocess.run(
        [
            str(VENV_BIN / "openapi-python-client"),
            "generate",
            "--path",
            str(ROOT / "docs" / "openapi.yaml"),
            "--meta",
            "none",
            "--output-path",
            str(tmp_path / "svc_client"),
        ],
        env={**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("svc_client")
    for name in [name for name in sys.modules if name.partition(".")[0] == "svc_client"]:
        del sys.modules[name]


def test_a_generated_client_runs_a_whole_integration_typed(svc_client, receiver, ca_bundle):
    """The flow of clients/typescript/integration.ts, each answer parsed into the generated
    model of its status: token, automatic and manual payments, partial capture, refund,
    filtered and paged lists, webhook endpoint, a simulated webhook, events whose
    `data.object` is a Payment or a Refund, a decline's 402 and a sandbox 503."""
    from svc_client.api.events import events_list, events_retrieve
    from svc_client.api.payments import (
        payments_captures_create,
        payments_create,
        payments_list,
        payments_refunds_create,
    )
    from svc_client.api.refunds import refunds_retrieve
    from svc_client.api.sandbox import sandbox_simulate_webhook_create, sandbox_tokens_create
    from svc_client.api.webhook_endpoints import webhook_endpoints_create
    from svc_client.models import (
        CaptureInput,
        CaptureMethod,
        Error,
        ErrorType,
        EventList,
        EventType,
        Payment,
        PaymentCreateInput,
        PaymentCreateInputMetadata,
        PaymentEvent,
        PaymentEventWithAttempts,
        PaymentFees,
        PaymentList,
        PaymentMethodInput,
        PaymentStatus,
        Refund,
        RefundCreateInput,
        RefundEvent,
        SimulateInput,
        Token,
        TokenInput,
        WebhookAttemptStatus,
        WebhookEndpointInput,
        WebhookEndpointWithSecret,
    )

    secret = merchant_create(name="Client", email="client@example.test").keys["test"]["secret"]
    local_receivers = {"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8", "WEBHOOK_CA_BUNDLE": ca_bundle}
    with web_server(**local_receivers) as base_url:
        client = svc_client.AuthenticatedClient(base_url=base_url, token=secret.secret)

        def token(number: str = "4242424242424242") -> Token:
            card = TokenInput(number=number, exp_month=12, exp_year=2099, cvc="123")
            created = sandbox_tokens_create.sync(client=client, body=card)
            assert isinstance(created, Token), created
            return created

        def pay(number: str = "4242424242424242", **fields) -> Payment | Error | None:
            body = PaymentCreateInput(
                amount=fields.pop("amount", 2500),
                currency="eur",
                reference="py-order",
                payment_method=PaymentMethodInput(type_="card", token=token(number).id),
                **fields,
            )
            return payments_create.sync(client=client, idempotency_key=str(uuid.uuid4()), body=body)

        automatic = pay()
        assert isinstance(automatic, Payment), automatic
        assert automatic.status == PaymentStatus.CAPTURED
        assert automatic.outcome.decline_is_soft is None and automatic.outcome.response_code == "00"
        assert automatic.method.card.last4 == "4242"
        assert isinstance(automatic.fees, PaymentFees) and automatic.fees.breakdown.mdr >= 0

        manual = pay(amount=4000, capture_method=CaptureMethod.MANUAL)
        assert isinstance(manual, Payment) and manual.status == PaymentStatus.AUTHORIZED
        captured = payments_captures_create.sync(
            manual.id, client=client, body=CaptureInput(amount=2000), idempotency_key="cap-1"
        )
        assert isinstance(captured, Payment), captured
        assert (captured.amount_captured, captured.amount) == (2000, 4000)
        refund = payments_refunds_create.sync(
            manual.id, client=client, body=RefundCreateInput(amount=500)
        )
        assert isinstance(refund, Refund), refund
        assert (refund.payment, refund.amount) == (manual.id, 500)
        assert isinstance(refunds_retrieve.sync(refund.id, client=client), Refund)

        filters = {"amountgte": 2000, "currency": "eur", "limit": 1}
        first = payments_list.sync(client=client, **filters)
        assert isinstance(first, PaymentList) and first.has_more, first
        second = payments_list.sync(client=client, starting_after=first.next_cursor, **filters)
        assert isinstance(second, PaymentList), second
        assert {p.id for p in first.data + second.data} == {automatic.id, manual.id}

        endpoint = webhook_endpoints_create.sync(
            client=client,
            body=WebhookEndpointInput(url=receiver.url(), enabled_events=["payment.*"]),
            idempotency_key=str(uuid.uuid4()),
        )
        assert isinstance(endpoint, WebhookEndpointWithSecret), endpoint
        simulated = sandbox_simulate_webhook_create.sync(
            client=client,
            body=SimulateInput(
                type_=EventType.PAYMENT_CAPTURED, endpoint=endpoint.id, resource=automatic.id
            ),
            idempotency_key=str(uuid.uuid4()),
        )
        assert isinstance(simulated, PaymentEventWithAttempts), simulated
        assert simulated.data.object_.id == automatic.id
        assert [a.status for a in simulated.attempts] == [WebhookAttemptStatus.DELIVERED]
        detail = events_retrieve.sync(simulated.id, client=client)
        assert isinstance(detail, PaymentEventWithAttempts) and len(detail.attempts) == 1

        events = events_list.sync(client=client, limit=100)
        assert isinstance(events, EventList), events
        payment_events = [e for e in events.data if isinstance(e, PaymentEvent)]
        refund_events = [e for e in events.data if isinstance(e, RefundEvent)]
        assert all(isinstance(e.data.object_, Payment) for e in payment_events)
        assert refund_events and all(isinstance(e.data.object_, Refund) for e in refund_events)

        declined = pay("4000000000000002")
        assert isinstance(declined, Error), declined
        assert declined.error.type_ == ErrorType.CARD_ERROR
        assert declined.error.decline_code == "generic_decline"
        metadata = PaymentCreateInputMetadata.from_dict({"_svc_test_http_error": 503})
        unavailable = pay(metadata=metadata)
        assert isinstance(unavailable, Error), unavailable  # a 5xx is documented: parsed
        assert unavailable.error.type_ == ErrorType.API_ERROR
