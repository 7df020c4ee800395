"""A Python client generated from docs/openapi.yaml with openapi-python-client (README, "The
API's contract") creates a token, a payment and a refund against the real web process."""

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


def test_a_generated_client_creates_a_token_a_payment_and_a_refund(svc_client):
    from svc_client.api.payments import payments_create, payments_refunds_create
    from svc_client.api.sandbox import sandbox_tokens_create
    from svc_client.models import (
        Payment,
        PaymentCreateInput,
        PaymentMethodInput,
        PaymentStatus,
        Refund,
        RefundCreateInput,
        Token,
        TokenInput,
    )

    secret = merchant_create(name="Client", email="client@example.test").keys["test"]["secret"]
    with web_server() as base_url:
        client = svc_client.AuthenticatedClient(base_url=base_url, token=secret.secret)
        card = TokenInput(number="4242424242424242", exp_month=12, exp_year=2099, cvc="123")
        token = sandbox_tokens_create.sync(client=client, body=card)
        assert isinstance(token, Token), token
        payment = payments_create.sync(
            client=client,
            idempotency_key=str(uuid.uuid4()),
            body=PaymentCreateInput(
                amount=1000,
                currency="eur",
                reference="order-1",
                payment_method=PaymentMethodInput(type_="card", token=token.id),
            ),
        )
        assert isinstance(payment, Payment), payment
        assert payment.status == PaymentStatus.CAPTURED
        refund = payments_refunds_create.sync(
            payment.id, client=client, body=RefundCreateInput(amount=400)
        )
        assert isinstance(refund, Refund), refund
        assert (refund.payment, refund.amount) == (payment.id, 400)
