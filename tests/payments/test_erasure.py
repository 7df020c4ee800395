"""A customer's personal data erased on request: gone from every table that held it, ids,
amounts and statuses kept, the erasure in the admin's history (docs/data.md "Erasure")."""

import json

import pytest
from django.contrib.admin.models import LogEntry
from django.core.management import CommandError, call_command
from django.db import connection

from payments.erasure import ERASED_MESSAGE
from payments.models import Payment
from tests.payments.support import APPROVED, created, payment_body

pytestmark = pytest.mark.django_db

CUSTOMER = "cus_01J00000000000000000000000"
PERSONAL = ["Ann.Example@Example.test", "Ann Example", "+3725550100", "Rüütli 1"]


def customer(**extra) -> dict:
    return {
        "email": PERSONAL[0],
        "name": PERSONAL[1],
        "phone": PERSONAL[2],
        "billing_address": {"country": "ee", "line1": PERSONAL[3], "city": "Tartu"},
        **extra,
    }


def tables_holding(text: str) -> list[str]:
    """Every table of ours with a row whose text holds `text` (JSON, bytes and strings)."""
    holding = []
    with connection.cursor() as cursor:
        for model in ["payments_payment", "payments_operation", "events_event"]:
            cursor.execute(f"SELECT count(*) FROM {model} t WHERE t::text ILIKE %s", [f"%{text}%"])
            holding += [model] if cursor.fetchone()[0] else []
        cursor.execute(
            "SELECT count(*) FROM api_idempotencyrecord WHERE position(%s in body) > 0",
            [text.encode()],
        )
        holding += ["api_idempotencyrecord"] if cursor.fetchone()[0] else []
    return holding


@pytest.fixture
def operator(django_user_model):
    return django_user_model.objects.create_user("support", password="x" * 20, is_staff=True)


def erase(merchant, operator, *args) -> dict:
    out = []

    class Out:
        write = out.append

    call_command(
        "erase_customer", "--merchant", merchant.id, "--operator", operator.username,
        "--json", *args, stdout=Out(),
    )  # fmt: skip
    return json.loads("".join(out))


@pytest.mark.postgres
def test_erasure_by_email_removes_the_data_everywhere_and_keeps_the_records(
    api, merchant, operator
):
    by_email = created(api, APPROVED, customer=customer(), HTTP_IDEMPOTENCY_KEY="k1")
    with_id = created(api, APPROVED, customer=customer(id=CUSTOMER), HTTP_IDEMPOTENCY_KEY="k2")
    someone_else = created(api, APPROVED, customer={"email": "bob@example.test"})
    assert tables_holding("Ann Example") == ["payments_payment", "payments_operation"]

    result = erase(merchant, operator, "--email", "ann.example@EXAMPLE.test", "--for-real")

    assert sorted(result["payments"]) == sorted([by_email["id"], with_id["id"]])
    for text in PERSONAL:
        assert tables_holding(text) == []
    kept = Payment.objects.get(pk=with_id["id"])
    assert (kept.customer, kept.amount, kept.status) == (CUSTOMER, 1000, "captured")
    assert Payment.objects.get(pk=someone_else["id"]).customer_details is not None
    history = LogEntry.objects.filter(object_id=by_email["id"], user=operator)
    assert history.get().change_message == ERASED_MESSAGE


def test_erasure_by_customer_id_is_a_dry_run_unless_for_real(api, merchant, operator):
    payment = created(api, APPROVED, customer=customer(id=CUSTOMER))
    assert erase(merchant, operator, "--customer", CUSTOMER) == {
        "payments": [payment["id"]],
        "erased": False,
        "dry_run": True,
    }
    assert Payment.objects.get(pk=payment["id"]).customer_details is not None
    erase(merchant, operator, "--customer", CUSTOMER, "--for-real")
    assert Payment.objects.get(pk=payment["id"]).customer_details is None


def test_erasure_touches_only_the_named_merchant(api, merchant, other_merchant, operator):
    payment = created(api, APPROVED, customer=customer(id=CUSTOMER))
    assert erase(other_merchant, operator, "--customer", CUSTOMER, "--for-real")["payments"] == []
    assert Payment.objects.get(pk=payment["id"]).customer_details is not None


def test_erasure_needs_a_customer_and_a_staff_operator(merchant, operator, django_user_model):
    with pytest.raises(CommandError, match="Name the customer"):
        erase(merchant, operator)
    outsider = django_user_model.objects.create_user("outsider", password="x" * 20)
    with pytest.raises(CommandError, match="No staff user"):
        erase(merchant, outsider, "--email", "a@b.test")


def test_erasure_from_the_payment_page_asks_then_erases_every_payment_of_the_customer(
    staff_client, api
):
    first = created(api, APPROVED, customer=customer())
    second = created(api, APPROVED, customer=customer(email=PERSONAL[0].upper()))
    page = staff_client.get(f"/admin/payments/payment/{first['id']}/change/").content.decode()
    assert 'id="action-erase-customer"' in page
    url = f"/admin/payments/payment/{first['id']}/erase-customer/"
    assert "Yes" in staff_client.get(url).content.decode()  # asks first
    assert Payment.objects.get(pk=first["id"]).customer_details is not None

    assert staff_client.post(url, {"confirmed": "yes"}).status_code == 302

    for payment in (first, second):
        assert Payment.objects.get(pk=payment["id"]).customer_details is None
    assert LogEntry.objects.filter(object_id=second["id"], change_message=ERASED_MESSAGE).exists()
    page = staff_client.get(f"/admin/payments/payment/{first['id']}/change/").content.decode()
    assert 'id="action-erase-customer"' not in page  # nothing left to erase


@pytest.mark.postgres
def test_a_customer_known_by_name_and_phone_only_is_erased_through_their_payment(
    api, merchant, staff_client, django_user_model
):
    operator = django_user_model.objects.get(username="support")  # staff_client's user
    # No cus_ id and no email: the payment itself names the customer (the admin answered 500).
    named = created(api, APPROVED, customer={"name": PERSONAL[1], "phone": PERSONAL[2]})
    with pytest.raises(CommandError, match="Name the customer"):
        erase(merchant, operator)
    url = f"/admin/payments/payment/{named['id']}/erase-customer/"
    assert (
        'id="action-erase-customer"'
        in staff_client.get(f"/admin/payments/payment/{named['id']}/change/").content.decode()
    )

    assert staff_client.post(url, {"confirmed": "yes"}).status_code == 302

    for text in PERSONAL[1:3]:
        assert tables_holding(text) == []
    assert erase(merchant, operator, "--payment", named["id"])["payments"] == []  # nothing left


def created_wallet(api) -> dict:
    body = payment_body(
        None, method_type="paypal", currency="usd", return_url="https://shop.test/back",
        customer={"email": PERSONAL[0]},
    )  # fmt: skip
    response = api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY="wallet-1")
    assert response.status_code in (200, 201), response.content
    return response.json()


@pytest.mark.postgres
def test_a_wallet_payer_account_is_erased_from_the_payment_its_events_and_stored_answers(
    api, merchant, operator
):
    wallet = created_wallet(api)
    payer_account = wallet["method"]["details"]["payer_account"]
    assert payer_account and set(tables_holding(payer_account)) == {
        "payments_payment", "events_event", "api_idempotencyrecord",
    }  # fmt: skip

    assert erase(merchant, operator, "--email", PERSONAL[0], "--for-real")["payments"] == [
        wallet["id"]
    ]

    assert tables_holding(payer_account) == []
    shown = api.get(f"/v1/payments/{wallet['id']}").json()
    assert shown["method"]["details"]["payer_account"] is None
    assert shown["method"]["details"]["reference"] == wallet["method"]["details"]["reference"]
    replayed = created_wallet(api)
    assert replayed["id"] == wallet["id"] and replayed["method"]["details"]["payer_account"] is None
