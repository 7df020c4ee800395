"""Support staff: endpoints (never their secrets), events with their attempts, and the dead
letters with a resend action. Everything is read-only; changes go through the services."""

from django.contrib import admin

from accounts.backoffice import GuardedActionsAdmin, confirmed_action, user_may
from api.errors import ProcessingFailed
from events.models import Event
from webhooks.models import Attempt, DeadLetter, Delivery, WebhookEndpoint
from webhooks.services import requeue_dead_letters, resend_event

ATTEMPT_FIELDS = (
    "id",
    "endpoint",
    "attempt",
    "status",
    "http_status",
    "error",
    "duration_ms",
    "next_retry_at",
    "attempted_at",
)


class ReadOnlyAdmin(GuardedActionsAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # attempt history is kept (spec "Retries and dead letter" 5)


class AttemptInline(admin.TabularInline):
    model = Attempt
    fields = ATTEMPT_FIELDS
    readonly_fields = ATTEMPT_FIELDS
    ordering = ("attempted_at", "id")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ("id", "merchant", "livemode", "url", "status", "created", "deleted_at")
    list_filter = ("livemode", ("deleted_at", admin.EmptyFieldListFilter))
    search_fields = ("id", "url", "merchant__id", "merchant__name")
    fields = (
        "id",
        "merchant",
        "livemode",
        "url",
        "description",
        "enabled_events",
        "secret_last4",
        "previous_secret_expires_at",
        "created",
        "deleted_at",
    )


@confirmed_action(
    permission="resend",
    description="Resend to every subscribed endpoint",
    title="Resend events",
    live=lambda events: events.filter(livemode=True).exists(),
)
def resend_events(modeladmin, request, event):
    try:
        return f"Resent: deliveries {', '.join(resend_event(event=event))} queued."
    except ProcessingFailed:
        return "Not resent: no subscribed endpoint."


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "merchant", "livemode", "type", "resource_id", "created")
    list_display += ("dispatched_at", "dead_lettered_at")
    list_filter = ("livemode", "type", ("dead_lettered_at", admin.EmptyFieldListFilter))
    search_fields = ("id", "resource_id", "merchant__id")
    inlines = [AttemptInline]
    actions = [resend_events]

    def has_resend_permission(self, request):
        return user_may(request, "events.resend_event")


@confirmed_action(
    permission="requeue",
    description="Resend (one more attempt now, numbering continues)",
    title="Requeue dead letters",
    live=lambda deliveries: deliveries.filter(event__livemode=True).exists(),
)
def resend_dead_letters(modeladmin, request, delivery):
    requeue_dead_letters([delivery])
    return "Requeued: one more attempt now."


@admin.register(DeadLetter)
class DeadLetterAdmin(ReadOnlyAdmin):
    list_display = ("event", "endpoint", "attempt_count", "event_type", "merchant", "created")
    search_fields = ("event__id", "endpoint__id", "event__merchant__id")
    actions = [resend_dead_letters]

    def has_requeue_permission(self, request):
        return user_may(request, "webhooks.requeue_deadletter")

    def get_queryset(self, request):
        deliveries = super().get_queryset(request).select_related("event", "endpoint")
        return deliveries.filter(status=Delivery.Status.DEAD_LETTERED)

    @admin.display(description="type")
    def event_type(self, delivery):
        return delivery.event.type

    @admin.display(description="merchant")
    def merchant(self, delivery):
        return delivery.event.merchant_id
