import json

from django.core.management.base import BaseCommand, CommandError

from accounts.models import Merchant
from sandbox.reset import sandbox_counts, sandbox_reset


class Command(BaseCommand):
    help = (
        "Delete one merchant's test-mode data (payments, refunds, disputes, tokens, events, "
        "deliveries, attempts, stored idempotent answers; test webhook endpoints with "
        "--webhook-endpoints), in bounded batches; keys, live mode and other merchants are "
        'untouched (docs/sandbox.md "Reset"). Dry run that counts the rows unless --for-real.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--merchant", required=True, help="the merchant's mch_ id")
        parser.add_argument(
            "--webhook-endpoints", action="store_true", help="also delete its test endpoints"
        )
        parser.add_argument("--for-real", action="store_true", help="actually delete")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, merchant, webhook_endpoints, for_real, as_json, **options):
        found = Merchant.objects.filter(pk=merchant).first()
        if found is None:
            raise CommandError(f"No merchant {merchant!r}.")
        if not for_real:
            self._print({"dry_run": True, "would_delete": sandbox_counts(merchant=found)}, as_json)
            return
        # No time limit from a shell: it runs until nothing is left.
        result = sandbox_reset(
            merchant=found, webhook_endpoints=webhook_endpoints, seconds=float("inf")
        )
        self._print({"dry_run": False, **result.as_dict()}, as_json)

    def _print(self, answer: dict, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(answer))
            return
        for kind, count in answer.get("would_delete", answer.get("deleted")).items():
            self.stdout.write(f"{kind}: {count}")
        if answer["dry_run"]:
            self.stdout.write("Dry run: nothing deleted. Run again with --for-real to do it.")
        elif not answer["complete"]:
            self.stdout.write(
                f"{answer['in_flight']} row(s) held by requests in flight: run again."
            )
