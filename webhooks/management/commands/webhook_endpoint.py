import json

from django.core.management.base import BaseCommand, CommandError

from api.errors import ServiceError
from webhooks.models import WebhookEndpoint
from webhooks.serializers import endpoint_to_dict, patterns_from_text
from webhooks.services import endpoint_pause, endpoint_resume, endpoint_update

ACTOR = "command"


class Command(BaseCommand):
    help = (
        "Change a webhook endpoint as POST /v1/webhook-endpoints/:id, /pause and /resume do: "
        "`update` with any of --url (checked by the URL guard), --description, "
        "--enabled-events and --ordered-delivery on|off; `pause`; `resume` (its waiting events "
        "are sent, oldest first). Prints the endpoint as the API shows it (never its secret)."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["update", "pause", "resume", "show"])
        parser.add_argument("endpoint", help="the whe_ id")
        parser.add_argument("--url")
        parser.add_argument("--description")
        parser.add_argument(
            "--enabled-events", help="comma-separated event types or patterns, e.g. payment.*"
        )
        parser.add_argument("--ordered-delivery", choices=["on", "off"])

    def handle(self, *args, action, endpoint, **options):
        found = WebhookEndpoint.objects.filter(pk=endpoint, deleted_at__isnull=True).first()
        if found is None:
            raise CommandError(f"No webhook endpoint {endpoint} (or it was deleted).")
        try:
            changed = self.run(action, found, options)
        except ServiceError as refused:
            raise CommandError(f"Refused ({refused.code}): {refused.message}") from None
        self.stdout.write(json.dumps(endpoint_to_dict(changed), indent=2))

    def run(self, action: str, endpoint: WebhookEndpoint, options: dict) -> WebhookEndpoint:
        if action == "pause":
            return endpoint_pause(endpoint=endpoint, actor=ACTOR)
        if action == "resume":
            return endpoint_resume(endpoint=endpoint, actor=ACTOR)
        if action == "update":
            return endpoint_update(endpoint=endpoint, actor=ACTOR, **changes_of(options))
        return endpoint


def changes_of(options: dict) -> dict:
    """The options given, as endpoint_update's changes; CommandError when none is."""
    changes = {name: options[name] for name in ("url", "description") if options[name]}
    if options["enabled_events"]:
        try:
            changes["enabled_events"] = patterns_from_text(options["enabled_events"])
        except ValueError as bad:
            raise CommandError(str(bad)) from None
    if options["ordered_delivery"]:
        changes["ordered_delivery"] = options["ordered_delivery"] == "on"
    if not changes:
        raise CommandError(
            "Nothing to update: give --url, --description, --enabled-events or --ordered-delivery."
        )
    return changes
