"""`manage.py connector_account create|rotate|revoke|list` (docs/processors.md "From a
shell"): what the admin's connector-account pages do, through the same services.

Keys never come from the command line: argv is readable by every user of the host (`ps`,
/proc/<pid>/cmdline) and lands in shell history. They come from the environment
(CONNECTOR_SECRET_KEY, CONNECTOR_PUBLISHABLE_KEY, CONNECTOR_WEBHOOK_SECRET: readable by the
same user and root only), or with --stdin from `NAME=value` lines on standard input (a
password manager's pipe), which then replace the environment's."""

import json
import os
import sys

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from accounts.management.commands._change import ChangeCommand
from accounts.models import Merchant
from api.errors import ServiceError
from api.renderers import format_timestamp
from processors.connector_accounts import (
    CREDENTIALS,
    account_create,
    account_revoke,
    account_rotate,
    routes_naming,
    webhook_url,
)
from processors.models import ConnectorAccount

VARIABLES = {f"CONNECTOR_{name.upper()}": name for name in CREDENTIALS}


def credentials_from(lines) -> dict[str, str]:
    """The credentials named in `NAME=value` lines (blank lines and # comments skipped)."""
    given = {}
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        variable, sep, value = line.partition("=")
        if not sep or variable.strip() not in VARIABLES:
            raise CommandError(
                f"Standard input line {number}: expected NAME=value with NAME one of "
                f"{', '.join(VARIABLES)}."  # never the line itself: it may hold a key
            )
        given[VARIABLES[variable.strip()]] = value
    return given


def as_dict(account: ConnectorAccount) -> dict:
    return {
        "id": account.id,
        "processor": account.processor,
        "name": account.name,
        "merchant": account.merchant_id,
        "api_base": account.api_base or None,
        "secret_key_last4": account.secret_key_last4,
        "webhook_secret_set": bool(account.webhook_secret_encrypted),
        "active": account.active,
        "revoked_at": format_timestamp(account.revoked_at),
        "created": format_timestamp(account.created),
        "webhook_url": webhook_url(account),
    }


def line(account: ConnectorAccount) -> str:
    owner = account.merchant_id or "platform"
    status = "active" if account.active else f"revoked {format_timestamp(account.revoked_at)}"
    return (
        f"{account.id}  {account.processor}  {account.name!r}  {owner}  "
        f"…{account.secret_key_last4}  {status}"
    )


class Command(ChangeCommand):
    failed = "Nothing was changed: run the command again"
    help = (
        "Create, rotate, revoke or list connector accounts (a processor's keys). Keys are read "
        "from CONNECTOR_SECRET_KEY, CONNECTOR_PUBLISHABLE_KEY and CONNECTOR_WEBHOOK_SECRET, or "
        "with --stdin from NAME=value lines; never from arguments."
    )
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="a new account with its keys")
        create.add_argument("--processor", required=True, choices=ConnectorAccount.Processor.values)
        create.add_argument("--name", required=True, help="what support staff call it")
        create.add_argument("--merchant", help="mch_ id of its owner; none: the platform's")
        create.add_argument("--api-base", default="", help="an emulator's URL; none: Stripe's")
        rotate = actions.add_parser("rotate", help="replace any of its keys")
        rotate.add_argument("account_id")
        revoke = actions.add_parser("revoke", help="stop it serving (dry run unless --for-real)")
        revoke.add_argument("account_id")
        revoke.add_argument("--for-real", action="store_true", help="actually revoke it")
        listing = actions.add_parser("list", help="every account, newest first")
        for sub in (create, rotate):
            sub.add_argument("--stdin", action="store_true", dest="from_stdin")
        for sub in (create, rotate, revoke, listing):
            sub.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args, action, as_json, **options):
        try:
            result = getattr(self, f"do_{action}")(**options)
        except ServiceError as refused:
            raise CommandError(refused.message) from None
        except ValidationError as invalid:
            raise CommandError(invalid_text(invalid)) from None
        if as_json:
            self.stdout.write(json.dumps(result["json"]))
        else:
            self.stdout.write("\n".join(result["text"]))

    def credentials(self, options) -> dict[str, str]:
        if options["from_stdin"]:
            return credentials_from(options.get("stdin") or sys.stdin)
        return {name: os.environ[var] for var, name in VARIABLES.items() if os.environ.get(var)}

    def do_create(self, *, processor, name, merchant, api_base, **options):
        owner = None
        if merchant:
            owner = Merchant.objects.filter(pk=merchant).first()
            if owner is None:
                raise CommandError(f"No merchant {merchant}.")
        account = ConnectorAccount(
            processor=processor, name=name, merchant=owner, api_base=api_base
        )
        account = account_create(account, **self.credentials(options))
        return {
            "json": as_dict(account),
            "text": [
                f"Created {line(account)}",
                f"Its webhook URL, for the processor's dashboard: {webhook_url(account)}",
            ],
        }

    def do_rotate(self, *, account_id, **options):
        account = find(account_id)
        replaced = account_rotate(account, **self.credentials(options))
        account.refresh_from_db()
        kept = ""
        if "webhook_secret" in replaced and account.previous_webhook_secret_expires_at:
            until = format_timestamp(account.previous_webhook_secret_expires_at)
            kept = f" The previous webhook secret is accepted until {until}."
        return {
            "json": {**as_dict(account), "replaced": replaced},
            "text": [f"Replaced {', '.join(replaced)} of {account.id}.{kept}"],
        }

    def do_revoke(self, *, account_id, for_real, **options):
        account = find(account_id)
        routes = account_revoke(account) if for_real else list(routes_naming(account))
        named = [f"{r.merchant_id} {r.method_type} {r.currency}" for r in routes]
        text = f"Revoked {account.id}." if for_real else f"Would revoke {line(account)}."
        return {
            "json": {**as_dict(account), "routes": named, "dry_run": not for_real},
            "text": [
                text,
                f"Routes naming it (no_route once revoked): {', '.join(named) or 'none'}",
            ]
            + ([] if for_real else ["Run again with --for-real to do it."]),
        }

    def do_list(self, **options):
        accounts = list(ConnectorAccount.objects.order_by("-created"))
        return {
            "json": [as_dict(account) for account in accounts],
            "text": [line(account) for account in accounts] or ["No connector account."],
        }


def find(account_id: str) -> ConnectorAccount:
    account = ConnectorAccount.objects.filter(pk=account_id).first()
    if account is None:
        raise CommandError(f"No connector account {account_id}.")
    return account


def invalid_text(invalid: ValidationError) -> str:
    if hasattr(invalid, "error_dict"):
        return "; ".join(f"{field}: {' '.join(errors)}" for field, errors in invalid)
    return " ".join(invalid.messages)
