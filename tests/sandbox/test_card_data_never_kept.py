"""The full card number and the cvc never come back in a response and are never stored
(spec "POST /v1/sandbox/tokens": the service never stores the number or the security code)."""

import datetime
import logging

import pytest
from django.apps import apps

from accounts.models import ApiKey
from tests.payments.support import payment_body

NUMBER = "4000000000003220"
CVC = "9817"


def database_text() -> str:
    """Every row of every table the project knows, as text; but the API keys' hashes: random
    hex made before any card is sent, which may hold any four digits (a CI run once found the
    cvc's in one)."""
    return "\n".join(
        repr(row) for model in apps.get_models() for row in model.objects.values_list(*kept(model))
    )


def kept(model) -> list[str]:
    fields = [field.attname for field in model._meta.concrete_fields]
    return [name for name in fields if name != "key_hash"] if model is ApiKey else fields


@pytest.fixture
def whole_second_clock(time_machine):
    """Frozen at a whole second before any row is made (the keys' fixtures included): no
    timestamp can then contain the cvc's digits by chance (CI once saw 02:07:15.398176)."""
    time_machine.move_to(datetime.datetime(2030, 7, 7, 7, 7, 7, tzinfo=datetime.UTC), tick=False)


def test_number_and_cvc_appear_in_no_response_no_row_and_no_log(
    whole_second_clock, api, publishable_api, caplog
):
    caplog.set_level(logging.DEBUG)
    assert CVC not in database_text()
    responses = [
        publishable_api.post(
            "/v1/sandbox/tokens",
            {"number": "4000 0000 0000 3220", "exp_month": 1, "exp_year": 2031, "cvc": CVC},
            format="json",
        )
    ]
    token = responses[0].json()["id"]
    payment = api.post("/v1/payments", payment_body(token), format="json")
    responses += [
        payment,
        api.get(f"/v1/payments/{payment.json()['id']}"),
        api.get("/v1/payments"),
    ]
    for response in responses:
        text = response.content.decode()
        assert NUMBER not in text and CVC not in text
        assert "4000 0000 0000 3220" not in text
    # Random material made by the call (ids, the keyed fingerprint) may hold any digits.
    fingerprint = payment.json()["method"]["card"]["fingerprint"]
    stored = database_text()
    for random_part in (token, payment.json()["id"], fingerprint):
        stored = stored.replace(random_part, "")
    assert NUMBER not in stored and CVC not in stored
    assert "3220" in stored  # the scan does see the card's rows: last four are kept
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert NUMBER not in logged and CVC not in logged
