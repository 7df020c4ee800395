import json

from django.core.management.base import CommandError

from accounts.management.commands._change import ChangeCommand
from accounts.models import ApiKey
from accounts.services import api_key_revoke
from api.renderers import format_timestamp


class Command(ChangeCommand):
    failed = (
        "The key may not be revoked: run the command again (a second revocation changes nothing)"
    )
    help = "Revoke an API key by its key_ id. Dry run unless --for-real is given."

    def add_arguments(self, parser):
        parser.add_argument("key_id", help="key_ id (see the admin or issue_key's output)")
        parser.add_argument("--for-real", action="store_true", help="actually revoke it")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, key_id, for_real, as_json, **options):
        api_key = ApiKey.objects.select_related("merchant").filter(pk=key_id).first()
        if api_key is None:
            raise CommandError(f"No API key {key_id}.")
        if for_real:
            api_key = api_key_revoke(api_key=api_key)
        result = {
            "id": api_key.id,
            "merchant": api_key.merchant_id,
            "revoked": for_real,
            "revoked_at": format_timestamp(api_key.revoked_at),
            "dry_run": not for_real,
        }
        if as_json:
            self.stdout.write(json.dumps(result))
        elif for_real:
            self.stdout.write(f"Revoked {api_key} at {result['revoked_at']}.")
        else:
            self.stdout.write(
                f"Would revoke {api_key} of {api_key.merchant}. Run again with --for-real to do it."
            )
