import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from api.errors import ServiceError
from api.fields import parse_time_filter
from webhooks.models import WebhookEndpoint
from webhooks.recovery import endpoint_recover, recover_page


class Command(BaseCommand):
    help = (
        "Give every event since --since whose delivery to the endpoint failed (waiting for a "
        "retry, dead-lettered or held) one more attempt now, numbering continued, oldest first, "
        "at most --limit (WEBHOOK_RECOVER_MAX) per run. Dry run that lists them unless "
        "--for-real is given. The endpoint's own mode (test or live) is the only one touched."
    )

    def add_arguments(self, parser):
        parser.add_argument("endpoint", help="the whe_ id")
        parser.add_argument(
            "--since",
            required=True,
            help="events created at or after this time (RFC 3339 or unix seconds)",
        )
        parser.add_argument("--starting-after", help="an evt_ id: continue after it")
        parser.add_argument("--limit", type=int, default=settings.WEBHOOK_RECOVER_MAX)
        parser.add_argument("--for-real", action="store_true", help="actually requeue them")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, endpoint, since, starting_after, limit, for_real, as_json, **options):
        since_time = parse_time_filter(since)
        if since_time is None:
            raise CommandError("--since must be RFC 3339 with a zone, or unix seconds.")
        if limit < 1:
            raise CommandError("--limit must be at least 1.")
        found = WebhookEndpoint.objects.filter(pk=endpoint, deleted_at__isnull=True).first()
        if found is None:
            raise CommandError(f"No webhook endpoint {endpoint} (or it was deleted).")
        run = self.recover if for_real else self.dry_run
        event_ids, next_after = run(found, since_time, starting_after, limit)
        if as_json:
            has_more = next_after is not None
            body = {"events": event_ids, "has_more": has_more, "dry_run": not for_real}
            self.stdout.write(json.dumps({"endpoint": found.id, "requeued": for_real, **body}))
            return
        for event_id in event_ids:
            self.stdout.write(event_id)
        verb = "Requeued" if for_real else "Would requeue"
        more = f" More left: run again with --starting-after {next_after}." if next_after else ""
        dry = "" if for_real else " Run again with --for-real to do it."
        self.stdout.write(f"{verb} {len(event_ids)} event(s) for {found.id}.{more}{dry}")

    def dry_run(self, endpoint, since, starting_after, limit) -> tuple[list[str], str | None]:
        """What a run --for-real would requeue now (the same page, nothing changed)."""
        page, next_after = recover_page(endpoint, since, timezone.now(), starting_after, limit)
        return [delivery.event_id for delivery in page], next_after

    def recover(self, endpoint, since, starting_after, limit) -> tuple[list[str], str | None]:
        try:
            recovered = endpoint_recover(
                endpoint=endpoint,
                since=since,
                actor="command",
                starting_after=starting_after,
                limit=limit,
            )
        except ServiceError as refused:
            raise CommandError(f"Refused ({refused.code}): {refused.message}") from None
        return recovered.event_ids, recovered.next_starting_after
