"""A live Stripe route names an account that serves it (processors.accounts): it exists, is
a Stripe account, is active, and is the route's merchant's own or the platform's. The same
rules hold through Route.full_clean, so in the merchant's admin page and `manage.py route`.

The Stripe connector's route_problems (which returns account_problems) is being written on
main: the tests through the admin and the command skip until it is there."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from api.errors import ProcessingFailed
from backoffice.toolkit import admin_url
from payments.connectors import Connector
from payments.models import Route
from processors.accounts import account_problems, routed_account
from processors.connector_accounts import account_revoke
from processors.stripe.connector import StripeConnector

connector_merged = pytest.mark.skipif(
    StripeConnector.route_problems is Connector.route_problems,
    reason="the Stripe connector's route_problems is not merged yet",
)
# (case, the account the route names -> its id, the problem expected or None)
CASES = [
    ("missing", lambda own, other, revoked, platform: "", "Name the connector account"),
    ("unknown", lambda *accounts: "cacct_nobody", "No stripe connector account"),
    ("other merchant's", lambda own, other, revoked, platform: other.pk, "another merchant"),
    ("revoked", lambda own, other, revoked, platform: revoked.pk, "revoked"),
    ("platform's", lambda own, other, revoked, platform: platform.pk, None),
    ("own", lambda own, other, revoked, platform: own.pk, None),
]


@pytest.fixture
def accounts(make_account, merchant, other_merchant):
    """(own, another merchant's, own but revoked, the platform's)"""
    revoked = make_account(merchant)
    account_revoke(revoked)
    return make_account(merchant), make_account(other_merchant), revoked, make_account()


def route_to(merchant, account_id: str) -> Route:
    return Route(
        merchant=merchant,
        method_type="card",
        currency="eur",
        connector="stripe",
        account=account_id,
    )


@pytest.mark.parametrize(("case", "named", "problem"), CASES, ids=[c[0] for c in CASES])
def test_account_problems(accounts, merchant, case, named, problem):
    problems = account_problems(route_to(merchant, named(*accounts)), "stripe")
    if problem is None:
        assert problems == {}
    else:
        assert problem in problems["account"]


@connector_merged
@pytest.mark.parametrize(("case", "named", "problem"), CASES, ids=[c[0] for c in CASES])
def test_the_route_command_applies_the_same_rules(accounts, merchant, case, named, problem):
    args = ["set", "--merchant", merchant.pk, "--method", "card", "--currency", "EUR"]
    args += ["--connector", "stripe", "--account", named(*accounts), "--json"]
    if problem is None:
        out = StringIO()
        call_command("route", *args, stdout=out)
        assert json.loads(out.getvalue())["account"] == named(*accounts)
        assert Route.objects.get(merchant=merchant).account == named(*accounts)
    else:
        with pytest.raises(CommandError, match=problem):
            call_command("route", *args, stdout=StringIO())
        assert not Route.objects.filter(merchant=merchant).exists()


@connector_merged
@pytest.mark.parametrize(("case", "named", "problem"), CASES, ids=[c[0] for c in CASES])
def test_the_merchant_page_applies_the_same_rules(
    staff_client, accounts, merchant, case, named, problem
):
    response = staff_client.post(
        admin_url("accounts_merchant_change", merchant.pk),
        merchant_form(merchant, named(*accounts)),
    )
    if problem is None:
        assert response.status_code == 302
        assert Route.objects.get(merchant=merchant).account == named(*accounts)
    else:
        assert response.status_code == 200 and problem in response.content.decode()
        assert not Route.objects.filter(merchant=merchant).exists()


def merchant_form(merchant, account_id: str) -> dict:
    """The merchant's page as posted with one new route (and its keys' inline untouched)."""
    keys = list(merchant.api_keys.order_by("pk").values_list("pk", flat=True))
    form = {
        "name": merchant.name,
        "email": merchant.email,
        "transaction_limit": "",
        "pricing": json.dumps(merchant.pricing),
        "api_keys-TOTAL_FORMS": len(keys),
        "api_keys-INITIAL_FORMS": len(keys),
        "routes-TOTAL_FORMS": 1,
        "routes-INITIAL_FORMS": 0,
        "routes-0-method_type": "card",
        "routes-0-currency": "eur",
        "routes-0-connector": "stripe",
        "routes-0-account": account_id,
    }
    for index, key in enumerate(keys):
        form[f"api_keys-{index}-id"] = key
        form[f"api_keys-{index}-merchant"] = merchant.pk
    return form


def test_the_route_command_refuses_what_the_catalogue_refuses(merchant):
    with pytest.raises(CommandError, match="method_type: Not a method of the catalogue"):
        call_command(
            "route", "set", "--merchant", merchant.pk, "--method", "telepathy", "--currency",
            "eur", "--connector", "stripe", stdout=StringIO(),
        )  # fmt: skip
    with pytest.raises(CommandError, match="No merchant mch_nobody"):
        call_command("route", "list", "--merchant", "mch_nobody", stdout=StringIO())


def test_route_list_and_remove(make_account, merchant):
    account = make_account(merchant)
    route_to(merchant, account.pk).save()  # as saved before a rule changed: not re-checked
    out = StringIO()
    call_command("route", "list", "--merchant", merchant.pk, stdout=out)
    assert f"card eur -> stripe ({account.pk})" in out.getvalue()
    call_command(
        "route", "remove", "--merchant", merchant.pk, "--method", "card", "--currency", "eur",
        stdout=StringIO(),
    )  # fmt: skip
    assert not Route.objects.exists()
    with pytest.raises(CommandError, match="No route of"):
        call_command(
            "route", "remove", "--merchant", merchant.pk, "--method", "card", "--currency",
            "eur", stdout=StringIO(),
        )  # fmt: skip


def test_a_revoked_accounts_routes_answer_no_route(make_account, merchant):
    account = make_account(merchant)
    route_to(merchant, account.pk).save()
    assert routed_account(merchant_id=merchant.pk, method_type="card", currency="eur") == account
    account_revoke(account)
    with pytest.raises(ProcessingFailed) as refused:
        routed_account(merchant_id=merchant.pk, method_type="card", currency="eur")
    assert refused.value.code == "no_route"
