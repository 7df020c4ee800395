"""The method catalogue (payments/methods.py, docs/methods.md) and, per family, the whole flow
of a method paid without a token in test mode: redirect or asynchronous, then a refund."""

import datetime
from pathlib import Path

import pytest
from django.test import Client

from api.currencies import CURRENCY_EXPONENTS
from payments.methods import DETAILS_FIELDS, METHODS, Family, Flow, find_method, get_method
from tests.payments.support import create, created, error_of, event_types, payment_body, tokenize
from tests.refunds.support import refunded

RETURN_URL = "https://shop.example/back"
DOCS = Path(__file__).resolve().parents[2] / "docs"
T0 = datetime.datetime(2030, 3, 1, 12, 0, tzinfo=datetime.UTC)


def a_currency(method) -> str:
    return "eur" if method.serves("eur") else sorted(method.currencies)[0]


def test_the_catalogue_holds_55_methods_in_known_currencies():
    assert len(METHODS) == 55 and {m.family for m in METHODS.values()} == set(Family)
    for method in METHODS.values():
        assert method.name == method.name.lower()
        assert method.currencies is None or method.currencies <= CURRENCY_EXPONENTS.keys()
    token_paid = {name for name, method in METHODS.items() if method.card_like}
    assert token_paid == {"card", "apple_pay", "google_pay"}  # paypal is a wallet, not card-like
    assert {m.wallet for m in METHODS.values() if m.wallet} == {"apple_pay", "google_pay"}
    assert all(m.flow == Flow.IMMEDIATE for m in METHODS.values() if m.card_like)
    assert all(m.flow != Flow.IMMEDIATE for m in METHODS.values() if not m.card_like)


def test_the_docs_page_lists_exactly_the_catalogue():
    page = (DOCS / "methods.md").read_text(encoding="utf-8")
    catalogue = page.split("## The catalogue", 1)[1].splitlines()
    rows = [line for line in catalogue if line.startswith("| `")]
    listed = {}
    for row in rows:
        name, family, flow, currencies = (cell.strip(" `") for cell in row.strip("|").split("|"))
        listed[name] = (family, flow, currencies)
    assert listed == {
        name: (
            method.family,
            method.flow,
            "all" if method.currencies is None else " ".join(sorted(method.currencies)),
        )
        for name, method in METHODS.items()
    }


@pytest.mark.parametrize("name", sorted(name for name, m in METHODS.items() if not m.card_like))
def test_every_method_paid_without_a_token_starts_its_flow(api, name):
    method = METHODS[name]
    payment = created(
        api, None, method_type=name, currency=a_currency(method), return_url=RETURN_URL
    )
    expected = {Flow.REDIRECT: "requires_action", Flow.ASYNCHRONOUS: "processing"}[method.flow]
    assert (payment["status"], payment["method"]["type"]) == (expected, name)
    assert payment["method"]["card"] is None and "wallet" not in payment["method"]
    assert tuple(payment["method"]["details"]) == DETAILS_FIELDS[method.family]
    assert event_types(payment["id"]) == ["payment.created", f"payment.{expected}"]


def approve(payment: dict, action: str = "approve"):
    path = payment["next_action"]["redirect"]["url"].removeprefix("http://127.0.0.1:8000")
    assert path.startswith("/sandbox/challenge/")
    return Client().post(path, {"action": action})


# One method per family whose flow redirects, in a currency it serves.
REDIRECTING = [("paypal", "usd"), ("ideal", "eur"), ("pix", "brl"), ("klarna", "sek")]


@pytest.mark.parametrize("name, currency", REDIRECTING)
def test_redirect_family_approve_captures_and_refunds(api, name, currency):
    payment = created(api, None, method_type=name, currency=currency, return_url=RETURN_URL)
    assert payment["next_action"]["redirect"]["return_url"] == RETURN_URL
    page = Client().get(payment["next_action"]["redirect"]["url"])
    assert page.status_code == 200 and name in page.content.decode()
    response = approve(payment)
    assert response.status_code == 303 and response["Location"] == RETURN_URL
    body = api.get(f"/v1/payments/{payment['id']}").json()
    assert (body["status"], body["amount_captured"]) == ("captured", 1000)
    assert body["outcome"]["response_code"] == "00" and body["outcome"]["three_ds"] is None
    assert body["fees"] is not None and "next_action" not in body
    assert body["method"]["details"] == payment["method"]["details"]
    assert event_types(payment["id"]) == [
        "payment.created",
        "payment.requires_action",
        "payment.captured",
    ]
    assert refunded(api, payment["id"])["status"] == "succeeded"
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "refunded"


@pytest.mark.parametrize(
    "action, status, decline_code",
    [("decline", "declined", "sca_required"), ("timeout", "failed", None)],
)
def test_redirect_decline_and_timeout(api, action, status, decline_code):
    payment = created(api, None, method_type="ideal", return_url=RETURN_URL)
    approve(payment, action)
    body = api.get(f"/v1/payments/{payment['id']}").json()
    assert (body["status"], body["outcome"]["decline_code"]) == (status, decline_code)
    assert body["outcome"]["three_ds"] is None and body["outcome"]["avs_result"] is None


def test_redirect_with_manual_capture_authorizes(api):
    payment = created(api, None, method_type="blik", currency="pln", capture_method="manual")
    approve(payment)
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "authorized"


# One method per family whose flow is asynchronous, in a currency it serves.
ASYNCHRONOUS = [("sepa_debit", "eur"), ("oxxo", "mxn"), ("spei", "mxn")]


@pytest.mark.parametrize("name, currency", ASYNCHRONOUS)
def test_asynchronous_family_resolves_after_30_seconds_and_refunds_pending(
    api, time_machine, name, currency
):
    time_machine.move_to(T0, tick=False)
    payment = created(api, None, method_type=name, currency=currency)
    assert payment["status"] == "processing" and "next_action" not in payment
    time_machine.shift(datetime.timedelta(seconds=30))
    body = api.get(f"/v1/payments/{payment['id']}").json()
    assert (body["status"], body["amount_captured"]) == ("captured", 1000)
    assert event_types(payment["id"])[-1] == "payment.captured"
    refund = refunded(api, payment["id"])
    assert refund["status"] == "pending"  # bank rails settle refunds later too
    time_machine.shift(datetime.timedelta(seconds=30))
    assert api.get(f"/v1/refunds/{refund['id']}").json()["status"] == "succeeded"
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "refunded"


def test_method_details_by_family(api):
    sepa = created(api, None, method_type="sepa_debit")["method"]["details"]
    assert sepa["mandate"]["type"] == "online" and sepa["mandate"]["reference"].startswith(
        "MANDATE-"
    )
    ideal = created(api, None, method_type="ideal", return_url=RETURN_URL)["method"]["details"]
    assert ideal["bank"] == "ideal_test_bank"
    boleto = created(api, None, method_type="boleto", currency="brl")["method"]["details"]
    assert boleto["voucher_number"].isdigit() and boleto["expires_at"].endswith("Z")


def test_a_currency_the_method_does_not_serve_is_no_route(api):
    response = api.post(
        "/v1/payments", payment_body(method_type="ideal", currency="usd"), format="json"
    )
    error = error_of(response, 422, "processing_error", "no_route")
    assert "ideal" in error["message"] and "usd" in error["message"]


def test_a_token_for_a_method_paid_without_one_is_refused(api):
    token = tokenize(api)
    response = api.post("/v1/payments", payment_body(token, method_type="ideal"), format="json")
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == (
        "payment_method.token"
    )


def test_list_filters_by_every_kind_of_method(api):
    ideal = created(api, None, method_type="ideal")
    sepa = created(api, None, method_type="sepa_debit")
    card = create(api).json()
    for payment, name in ((ideal, "ideal"), (sepa, "sepa_debit"), (card, "card")):
        listed = api.get("/v1/payments", {"method_type": name}).json()["data"]
        assert [item["id"] for item in listed] == [payment["id"]]
    error = error_of(
        api.get("/v1/payments", {"method_type": "cash"}),
        400,
        "validation_error",
        "invalid_parameter",
    )
    assert error["param"] == "method_type"


def test_a_method_outside_the_catalogue_is_a_clear_error_not_none():
    assert find_method("nope") is None  # for validating what a client sent
    with pytest.raises(LookupError, match="'nope' is not a payment method of the catalogue"):
        get_method("nope")
