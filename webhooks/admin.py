"""Support staff: endpoints (never their secrets), events with their attempts, and the dead
letters with a resend action. Everything is read-only; changes go through the services."""

from django.contrib import admin
from django.db.models import OuterRef, Q, Subquery
from django.utils.html import format_html

from accounts.backoffice import (
    CappedPaginator,
    FixedChoicesFilter,
    MerchantFilter,
    MerchantFirstAdmin,
    ObjectAction,
    ObjectActionsAdmin,
    admin_url,
    confirmed_action,
    user_may,
)
from accounts.models import Merchant
from api.errors import ProcessingFailed
from events.catalogue import EVENT_TYPES
from events.models import Event
from webhooks.models import Attempt, DeadLetter, Delivery, WebhookEndpoint
from webhooks.services import requeue_dead_letters, resend_event

HEALTH_WINDOW = 100  # an endpoint's recent attempts its page sums up
RESPONSE_EXCERPT = 200  # characters of the receiver's answer shown in a list

ATTEMPT_FIELDS = (
    "id",
    "endpoint",
    "attempt",
    "status",
    "http_status",
    "error",
    "response_excerpt",
    "duration_ms",
    "next_retry_at",
    "attempted_at",
)


class ReadOnlyAdmin(ObjectActionsAdmin):
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

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("endpoint")  # no query per row

    @admin.display(description="response body")
    def response_excerpt(self, attempt):
        return attempt.response_body[:RESPONSE_EXCERPT]

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
        "health",
    )
    readonly_fields = ("health",)

    @admin.display(description=f"health (last {HEALTH_WINDOW} attempts)")
    def health(self, endpoint: WebhookEndpoint):
        recent = list(
            Attempt.objects.filter(endpoint=endpoint)
            .order_by("-attempted_at")
            .values("status", "error", "http_status", "attempted_at")[:HEALTH_WINDOW]
        )
        if not recent:
            return "no attempt yet"
        delivered = sum(a["status"] == Attempt.Status.DELIVERED for a in recent)
        failed = next((a for a in recent if a["status"] != Attempt.Status.DELIVERED), None)
        last_error = (
            f"{failed['attempted_at']:%Y-%m-%d %H:%M:%S} UTC: HTTP {failed['http_status']} "
            f"{failed['error'] or ''}"
            if failed
            else "none"
        )
        return f"{delivered}/{len(recent)} delivered; last error: {last_error}"


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


def event_search(term: str) -> Q:
    """Each kind of id through an index: a resource's events through event_resource, which
    leads with the merchant and mode, so every merchant and both modes are named (a few index
    probes) rather than a new index on every event written (docs/back-office.md "Finding")."""
    if term.startswith("evt_"):
        return Q(pk=term)
    if term.startswith("mch_"):
        return Q(merchant_id=term)
    return Q(merchant__in=Merchant.objects.all(), livemode__in=[False, True], resource_id=term)


class EventTypeFilter(FixedChoicesFilter):
    title, parameter_name = "type", "type"
    choices_of = tuple(sorted(EVENT_TYPES))


def resend_one(request, event, data) -> str:
    return resend_events.perform(None, request, event)


RESEND = ObjectAction("resend", "Resend", "events.resend_event", resend_one)


@admin.register(Event)
class EventAdmin(MerchantFirstAdmin, ReadOnlyAdmin):
    list_display = ("id", "merchant", "livemode", "type", "resource_id", "created")
    list_display += ("dispatched_at", "dead_lettered_at")
    list_filter = (
        "livemode",
        EventTypeFilter,
        ("dead_lettered_at", admin.EmptyFieldListFilter),
    )
    search_fields = ("=id",)  # shows the box; get_search_results reads what was typed
    search_help_text = "An event id (evt_…), a merchant id (mch_…) or a resource's id; exact."
    show_full_result_count = False
    paginator = CappedPaginator
    inlines = [AttemptInline]
    actions = [resend_events]
    object_actions = (RESEND,)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        return (queryset.filter(event_search(term)) if term else queryset), False

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


class EndpointFilter(admin.SimpleListFilter):
    """Endpoints listed from their own (small) table, not by a DISTINCT over the deliveries."""

    title = "endpoint"
    parameter_name = "endpoint"

    def lookups(self, request, model_admin):
        return [(e.id, f"{e.id} {e.url}") for e in WebhookEndpoint.objects.order_by("id")[:200]]

    def queryset(self, request, queryset):
        return queryset.filter(endpoint_id=self.value()) if self.value() else queryset


class DeliveryMerchantFilter(MerchantFilter):
    field = "event__merchant_id"


def last_attempt(field: str):
    """The delivery's latest attempt's `field`, read through attempt_numbers_unique."""
    latest = Attempt.objects.filter(delivery=OuterRef("pk")).order_by("-attempt")
    return Subquery(latest.values(field)[:1])


def with_last_attempt(deliveries):
    """Deliveries with their latest attempt's HTTP status, error and response body."""
    return deliveries.annotate(
        last_status=last_attempt("http_status"),
        last_error_text=last_attempt("error"),
        last_body=last_attempt("response_body"),
    )


@admin.register(Delivery)
class DeliveryAdmin(MerchantFirstAdmin, ReadOnlyAdmin):
    """Every delivery of every event, with its last attempt's answer (docs/back-office.md)."""

    list_display = (
        "id",
        "event_link",
        "event_type",
        "resource",
        "endpoint",
        "status",
        "attempt_count",
        "last_http_status",
        "last_error",
        "next_attempt_at",
        "created",
    )
    list_filter = (
        "status",
        EndpointFilter,
        ("created", admin.DateFieldListFilter),
        ("event__livemode", admin.BooleanFieldListFilter),
    )
    # An endpoint is one merchant's too (its deliveries read through the endpoint's index).
    merchant_filter = DeliveryMerchantFilter
    scoped_by = ("merchant", "endpoint")
    search_fields = ("=id", "=event__id", "=endpoint__id", "=event__resource_id")
    show_full_result_count = False
    paginator = CappedPaginator
    fields = (
        "id",
        "event_link",
        "endpoint",
        "status",
        "attempt_count",
        "next_attempt_at",
        "created",
    )
    readonly_fields = ("event_link",)
    inlines = [AttemptInline]

    def get_queryset(self, request):
        return with_last_attempt(super().get_queryset(request).select_related("event", "endpoint"))

    @admin.display(description="event")
    def event_link(self, delivery):
        url = admin_url("events_event_change", delivery.event_id)
        return format_html('<a href="{}">{}</a>', url, delivery.event_id)

    @admin.display(description="type")
    def event_type(self, delivery):
        return delivery.event.type

    @admin.display(description="resource")
    def resource(self, delivery):
        return delivery.event.resource_id

    @admin.display(description="merchant")
    def merchant(self, delivery):
        return delivery.event.merchant_id

    @admin.display(description="last HTTP status")
    def last_http_status(self, delivery):
        return delivery.last_status

    @admin.display(description="last error")
    def last_error(self, delivery):
        return (delivery.last_error_text or "")[:120]


@admin.register(DeadLetter)
class DeadLetterAdmin(DeliveryAdmin):
    list_display = (
        "event_link",
        "event_type",
        "resource",
        "endpoint",
        "merchant",
        "attempt_count",
        "last_http_status",
        "last_error",
        "created",
    )
    list_filter = (EndpointFilter, ("created", admin.DateFieldListFilter))
    actions = [resend_dead_letters]

    def has_requeue_permission(self, request):
        return user_may(request, "webhooks.requeue_deadletter")

    def get_queryset(self, request):
        return super().get_queryset(request).filter(status=Delivery.Status.DEAD_LETTERED)
