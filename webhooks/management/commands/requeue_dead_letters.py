import json

from django.core.management.base import BaseCommand, CommandError

from api.fields import parse_time_filter
from webhooks.selectors import dead_letters
from webhooks.services import requeue_dead_letters


class Command(BaseCommand):
    help = (
        "Give dead-lettered deliveries one more attempt now (numbering continues). "
        "Dry run that lists them unless --for-real is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("--merchant", help="only this merchant (mch_ id)")
        parser.add_argument(
            "--since", help="only events created at or after this time (RFC 3339 or unix seconds)"
        )
        parser.add_argument("--for-real", action="store_true", help="actually requeue them")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, merchant, since, for_real, as_json, **options):
        since_time = None
        if since:
            since_time = parse_time_filter(since)
            if since_time is None:
                raise CommandError("--since must be RFC 3339 with a zone, or unix seconds.")
        deliveries = list(dead_letters(merchant_id=merchant, since=since_time))
        if for_real:
            requeue_dead_letters(deliveries)
        listed = [{"event": d.event_id, "endpoint": d.endpoint_id} for d in deliveries]
        if as_json:
            self.stdout.write(
                json.dumps({"dead_letters": listed, "requeued": for_real, "dry_run": not for_real})
            )
            return
        for item in listed:
            self.stdout.write(f"{item['event']} -> {item['endpoint']}")
        verb = "Requeued" if for_real else "Would requeue"
        suffix = "" if for_real else " Run again with --for-real to do it."
        self.stdout.write(f"{verb} {len(listed)} dead letter(s).{suffix}")
