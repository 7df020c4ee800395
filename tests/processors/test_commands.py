"""`manage.py connector_account` (docs/processors.md "From a shell"): keys from the
environment or standard input, never from arguments; errors are one line and exit 1."""

import datetime
import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.utils import timezone

from processors.models import ConnectorAccount
from tests.processors.conftest import new_keys, route_to

ROOT = Path(__file__).resolve().parents[2]
VARIABLES = {
    "secret_key": "CONNECTOR_SECRET_KEY",
    "publishable_key": "CONNECTOR_PUBLISHABLE_KEY",
    "webhook_secret": "CONNECTOR_WEBHOOK_SECRET",
}


def run(*args, stdin: str | None = None) -> str:
    out = StringIO()
    extra = {"stdin": StringIO(stdin)} if stdin is not None else {}
    call_command("connector_account", *args, stdout=out, **extra)
    return out.getvalue()


def keys_in_environment(monkeypatch, keys: dict[str, str]) -> None:
    for name, value in keys.items():
        monkeypatch.setenv(VARIABLES[name], value)


def stdin_lines(keys: dict[str, str]) -> str:
    return "# from the password manager\n" + "".join(
        f"{VARIABLES[name]}={value}\n" for name, value in keys.items()
    )


@pytest.fixture(autouse=True)
def no_keys_in_environment(monkeypatch):
    for variable in VARIABLES.values():
        monkeypatch.delenv(variable, raising=False)


def test_create_reads_the_keys_from_the_environment(db, monkeypatch, keys, merchant):
    keys_in_environment(monkeypatch, keys)
    shown = json.loads(
        run("create", "--processor", "stripe", "--name", "EU", "--merchant", merchant.pk, "--json")
    )
    account = ConnectorAccount.objects.get(pk=shown["id"])
    assert (account.merchant, account.secret_key, account.publishable_key) == (
        merchant,
        keys["secret_key"],
        keys["publishable_key"],
    )
    assert account.webhook_secrets() == [keys["webhook_secret"]]
    assert shown["webhook_url"].endswith(f"/processors/stripe/webhooks/{account.pk}")
    assert not any(secret in json.dumps(shown) for secret in keys.values())


def test_create_reads_the_keys_from_standard_input_with_stdin(db, monkeypatch, keys):
    keys_in_environment(monkeypatch, new_keys())  # --stdin: the environment is not read
    given = {name: keys[name] for name in ("secret_key", "publishable_key")}
    out = run(
        "create", "--processor", "stripe", "--name", "Platform", "--api-base",
        "http://127.0.0.1:8420", "--stdin", stdin=stdin_lines(given),
    )  # fmt: skip
    account = ConnectorAccount.objects.get()
    assert account.pk in out and "platform" in out
    assert (account.secret_key, account.merchant, account.api_base) == (
        keys["secret_key"],
        None,
        "http://127.0.0.1:8420",
    )
    assert account.webhook_secrets() == []  # entered later, with rotate


@pytest.mark.parametrize(
    ("args", "keys", "message"),
    [
        (["--merchant", "mch_nobody"], new_keys(), "No merchant mch_nobody."),
        ([], {"secret_key": new_keys()["secret_key"]}, "publishable_key: Needed"),
        ([], {**new_keys(), "secret_key": "pk_test_oops"}, "Not a stripe secret key"),
        (["--api-base", "not a url"], new_keys(), "api_base:"),
    ],
)
def test_create_refuses_with_a_clear_message(db, monkeypatch, args, keys, message):
    keys_in_environment(monkeypatch, keys)
    with pytest.raises(CommandError, match=message) as refused:
        run("create", "--processor", "stripe", "--name", "EU", *args)
    assert not any(secret in str(refused.value) for secret in keys.values())
    assert not ConnectorAccount.objects.exists()


def test_rotate_replaces_the_webhook_secret_only_and_keeps_the_previous_24_hours(db, make_account):
    account = make_account()
    new_secret = new_keys()["webhook_secret"]
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        out = run("rotate", account.pk, "--stdin", stdin=f"CONNECTOR_WEBHOOK_SECRET={new_secret}\n")
    assert "Replaced webhook_secret" in out and "accepted until" in out
    account.refresh_from_db()
    assert account.secret_key == account.keys["secret_key"]
    with time_machine.travel(start + datetime.timedelta(hours=23)):
        assert account.webhook_secrets() == [new_secret, account.keys["webhook_secret"]]
    with time_machine.travel(start + datetime.timedelta(hours=24, seconds=1)):
        assert account.webhook_secrets() == [new_secret]


@pytest.mark.parametrize(
    ("account_id", "stdin", "message"),
    [
        ("cacct_nope", "CONNECTOR_SECRET_KEY=sk_test_x\n", "No connector account cacct_nope."),
        (None, "", "at least one credential"),
        (None, "SECRET=sk_test_hidden\n", "line 1: expected NAME=value"),
    ],
)
def test_rotate_refuses_with_a_clear_message(db, make_account, account_id, stdin, message):
    account = make_account()
    with pytest.raises(CommandError, match=message) as refused:
        run("rotate", account_id or account.pk, "--stdin", stdin=stdin)
    assert "sk_test_hidden" not in str(refused.value)
    account.refresh_from_db()
    assert account.secret_key == account.keys["secret_key"]


def test_a_revoked_account_cannot_be_rotated(db, make_account, monkeypatch):
    account = make_account()
    run("revoke", account.pk, "--for-real")
    keys_in_environment(monkeypatch, {"secret_key": new_keys()["secret_key"]})
    with pytest.raises(CommandError, match="revoked"):
        run("rotate", account.pk)


def test_revoke_is_a_dry_run_unless_for_real(db, make_account, merchant):

    account = make_account(merchant)
    route_to(account, merchant)
    dry = run("revoke", account.pk)
    assert "Would revoke" in dry and f"{merchant.pk} card eur" in dry
    assert ConnectorAccount.objects.get(pk=account.pk).active
    done = json.loads(run("revoke", account.pk, "--for-real", "--json"))
    assert done["active"] is False and done["routes"] == [f"{merchant.pk} card eur"]
    assert not ConnectorAccount.objects.get(pk=account.pk).active


def test_list_shows_every_account_without_its_keys(db, make_account, merchant):
    platform, own = make_account(), make_account(merchant)
    text = run("list")
    assert platform.pk in text and own.pk in text and merchant.pk in text
    listed = json.loads(run("list", "--json"))
    assert {row["id"] for row in listed} == {platform.pk, own.pk}
    for secret in (*platform.keys.values(), *own.keys.values()):
        assert secret not in text + json.dumps(listed)


def test_an_error_is_one_line_and_exit_status_1_never_a_traceback():
    """As an operator runs it: a bad standard input line, refused before any database read."""
    result = subprocess.run(
        [sys.executable, "manage.py", "connector_account", "create", "--processor", "stripe",
         "--name", "EU", "--stdin"],
        input="sk_live_pasted_alone\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "DEBUG": "true"},
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    assert "Standard input line 1: expected NAME=value" in result.stderr
    assert "Traceback" not in result.stderr and "sk_live_pasted_alone" not in result.stderr
