import json

from django.core.management.base import BaseCommand, CommandError

from api.errors import ServiceError
from events.models import Event
from webhooks.services import resend_event


class Command(BaseCommand):
    help = (
        "Resend one event now to every endpoint subscribed to it, or to --endpoint only. "
        "The attempts continue the event's numbering and follow the normal retry schedule."
    )

    def add_arguments(self, parser):
        parser.add_argument("event_id", help="evt_ id")
        parser.add_argument("--endpoint", help="whe_ id of one enabled endpoint of the merchant")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, event_id, endpoint, as_json, **options):
        event = Event.objects.filter(pk=event_id).first()
        if event is None:
            raise CommandError(f"No event {event_id}.")
        try:
            delivery_ids = resend_event(event=event, endpoint_id=endpoint or None)
        except ServiceError as refused:
            raise CommandError(f"{refused.code}: {refused.message}") from None
        if as_json:
            self.stdout.write(json.dumps({"event": event.id, "deliveries": delivery_ids}))
        else:
            self.stdout.write(f"Queued {len(delivery_ids)} delivery(ies) of {event}.")
