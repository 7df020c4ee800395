import json

from django.core.management.base import CommandError
from django.utils.dateparse import parse_datetime

from accounts.management.commands._change import ChangeCommand
from accounts.models import Merchant
from accounts.services import api_key_issue


class Command(ChangeCommand):
    failed = "No usable key was issued (a secret never shown cannot be used): run the command again"
    help = (
        "Issue a new API key for a merchant (for example to roll a lost key). "
        "The key is printed once and cannot be recovered."
    )

    def add_arguments(self, parser):
        parser.add_argument("--merchant", required=True, help="mch_ id")
        parser.add_argument("--kind", choices=["secret", "publishable"], default="secret")
        parser.add_argument("--mode", choices=["test", "live"], default="test")
        parser.add_argument("--expires-at", help="RFC 3339 time after which the key stops working")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, merchant, kind, mode, expires_at, as_json, **options):
        owner = Merchant.objects.filter(pk=merchant).first()
        if owner is None:
            raise CommandError(f"No merchant {merchant}.")
        expiry = parse_datetime(expires_at) if expires_at else None
        if expires_at and (expiry is None or expiry.tzinfo is None):
            raise CommandError(
                "--expires-at must be an RFC 3339 time with a zone, e.g. 2027-01-01T00:00:00Z."
            )
        issued = api_key_issue(
            merchant=owner, kind=kind, livemode=mode == "live", expires_at=expiry
        )
        if as_json:
            self.stdout.write(
                json.dumps(
                    {
                        "id": issued.api_key.id,
                        "merchant": owner.id,
                        "kind": kind,
                        "mode": mode,
                        "key": issued.secret,
                    }
                )
            )
        else:
            self.stdout.write(
                f"{issued.api_key.id}: {issued.secret}\nCopy the key now: it is shown only once."
            )
