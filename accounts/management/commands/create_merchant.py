import json

from accounts.management.commands._change import ChangeCommand
from accounts.services import merchant_create


class Command(ChangeCommand):
    failed = "No merchant was created whose keys were shown: run the command again"
    help = (
        "Create a merchant and its four API keys (test/live, secret/publishable). "
        "The keys are printed once and cannot be recovered."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--email", required=True)
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, name, email, as_json, **options):
        created = merchant_create(name=name, email=email)
        merchant = created.merchant
        keys = {
            mode: {kind: issued.secret for kind, issued in by_kind.items()}
            for mode, by_kind in created.keys.items()
        }
        # The `key_` ids that revoke_key and the admin take, in the same shape as the keys.
        key_ids = {
            mode: {kind: issued.api_key.id for kind, issued in by_kind.items()}
            for mode, by_kind in created.keys.items()
        }
        if as_json:
            self.stdout.write(
                json.dumps(
                    {
                        "id": merchant.id,
                        "name": merchant.name,
                        "email": merchant.email,
                        "keys": keys,
                        "key_ids": key_ids,
                    }
                )
            )
            return
        self.stdout.write(f"Merchant {merchant.id} ({merchant.name}, {merchant.email})")
        for mode, by_kind in keys.items():
            for kind, secret in by_kind.items():
                self.stdout.write(f"  {mode:4} {kind:11} {secret}  {key_ids[mode][kind]}")
        self.stdout.write("Copy the keys now: they are shown only once.")
