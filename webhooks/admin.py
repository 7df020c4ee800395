"""Support staff: endpoints (never their secrets), events with their attempts, and the dead
letters with a resend action. Everything is read-only; changes go through the services."""

from django.contrib import admin
from django.db.models import OuterRef, Q, Subquery
from django.utils.html import format_html

from accounts.merchantfirst import (
    MODE_PARAMETER,
    CreatedWindowFilter,
    MerchantFilter,
    MerchantFirstAdmin,
    ModeFilter,
    merchant_name,
)
from api.errors import ProcessingFailed
from backoffice.toolkit import (
    CappedPaginator,
    FixedChoicesFilter,
    ObjectAction,
    ReadOnlyAdmin,
    admin_url,
    confirmed_action,
    user_may,
    utc,
)
from events.catalogue import EVENT_TYPES
from events.models import Event
from webhooks.endpoint_admin import ERROR_SHOWN, url_shown
from webhooks.models import Attempt, DeadLetter, Delivery, WebhookEndpoint
from webhooks.services import requeue_dead_letters, resend_event

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
    """Each kind of id through an index: an event by its id, a resource's events through
    event_resource_id (docs/back-office.md "Finding")."""
    if term.startswith("evt_"):
        return Q(pk=term)
    return Q(resource_id=term)


def delivery_search(term: str) -> Q:
    """One condition by the id's prefix, each through an index; Django's OR of the four
    fields across their joins read every event (3.5 s at 1M payments, issue 22)."""
    if term.startswith("whd_"):
        return Q(pk=term)
    if term.startswith("whe_"):
        return Q(endpoint_id=term)
    return Q(event__in=Event.objects.filter(event_search(term)))


class EventTypeFilter(FixedChoicesFilter):
    title, parameter_name = "type", "type"
    choices_of = tuple(sorted(EVENT_TYPES))


def resend_one(request, event, data) -> str:
    return resend_events.perform(None, request, event)


RESEND = ObjectAction("resend", "Resend", "events.resend_event", resend_one)


@admin.register(Event)
class EventAdmin(MerchantFirstAdmin, ReadOnlyAdmin):
    list_display = ("id", merchant_name, "livemode", "type", "resource_id", "created", "sent")
    list_select_related = ("merchant",)
    list_filter = (
        ModeFilter,
        EventTypeFilter,
        ("dead_lettered_at", admin.EmptyFieldListFilter),
    )
    search_fields = ("=id",)  # shows the box; get_search_results reads what was typed
    search_help_text = (
        "An event id (evt_…), a resource's id, or a merchant id (mch_…: its list); exact."
    )
    show_full_result_count = False
    paginator = CappedPaginator
    inlines = [AttemptInline]
    actions = [resend_events]
    object_actions = (RESEND,)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        return (queryset.filter(event_search(term)) if term else queryset), False

    @admin.display(description="sent")
    def sent(self, event: Event):
        """When it was handed to its deliveries, and dead-lettered if it was: one column."""
        if event.dead_lettered_at:
            return format_html("dead-lettered<br><small>{}</small>", utc(event.dead_lettered_at))
        if event.dispatched_at:
            return format_html("dispatched<br><small>{}</small>", utc(event.dispatched_at))
        return "not yet"

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


def scoped_endpoints(params) -> list[str] | None:
    """The endpoints a deliveries list reads, from its URL: the chosen one (of the chosen
    merchant, if one is), else the chosen merchant's of the chosen mode (live unless test);
    None: every delivery. As a list of ids (one merchant has a few endpoints), so each is an
    index range of delivery_endpoint_list or, with a status, delivery_endpoint_status, newest
    first. Through a join on the endpoints the planner walked every merchant's deliveries by
    primary key for a small merchant's page (2.3M rows at 10M payments, docs/data.md "Reads
    at scale")."""
    endpoint = params.get(EndpointFilter.parameter_name)
    merchant = params.get(DeliveryMerchantFilter.parameter_name)
    if not endpoint and not merchant:
        return None
    if endpoint:
        endpoints = WebhookEndpoint.objects.filter(pk=endpoint)
    else:
        livemode = params.get(MODE_PARAMETER) != ModeFilter.TEST
        endpoints = WebhookEndpoint.objects.filter(livemode=livemode)
    if merchant:
        endpoints = endpoints.filter(merchant_id=merchant)
    return list(endpoints.order_by("pk").values_list("pk", flat=True))


class ScopeShown:
    """A filter of the deliveries' scope: listed for its choices, applied with the others by
    scoped_endpoints (DeliveryAdmin.get_queryset), as one list of endpoints."""

    def queryset(self, request, queryset):
        return queryset


class EndpointFilter(ScopeShown, admin.SimpleListFilter):
    """Endpoints listed from their own (small) table, not by a DISTINCT over the deliveries."""

    title = "endpoint"
    parameter_name = "endpoint"

    def lookups(self, request, model_admin):
        return [(e.id, f"{e.id} {e.url}") for e in WebhookEndpoint.objects.order_by("id")[:200]]


class DeliveryMerchantFilter(ScopeShown, MerchantFilter):
    """Through the merchant's endpoints (a few rows): through the events, the list read every
    delivery (issue 22)."""


class DeliveryModeFilter(ScopeShown, ModeFilter):
    """The endpoints' mode (a delivery's is its endpoint's and its event's); not offered
    once an endpoint is chosen (its own mode)."""

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        self.endpoint_chosen = bool(request.GET.get(EndpointFilter.parameter_name))

    def has_output(self):
        return not self.endpoint_chosen


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

    # Seven columns, several values stacked in one cell: the list fits 1,280 px with its
    # filters beside it (docs/back-office.md "Reading").
    list_display = (
        "id",
        "event_cell",
        "endpoint_cell",
        "status_cell",
        "last_answer",
        "next_attempt_at",
        "created",
    )
    list_filter = (
        "status",
        "injected",
        EndpointFilter,
        ("created", CreatedWindowFilter),
        DeliveryModeFilter,
    )
    # An endpoint is one merchant's too (its deliveries read through the endpoint's index).
    merchant_filter = DeliveryMerchantFilter
    scoped_by = ("merchant", "endpoint")
    search_fields = ("=id",)  # shows the box; get_search_results reads what was typed
    search_help_text = (
        "A delivery id (whd_…), an event id (evt_…), an endpoint id (whe_…) or a resource's id; "
        "exact."
    )
    show_full_result_count = False
    paginator = CappedPaginator
    fields = (
        "id",
        "event_link",
        "endpoint",
        "status",
        "attempt_count",
        "next_attempt_at",
        "injected",  # a test-mode failure profile's fault (webhooks.faults)
        "created",
    )
    readonly_fields = ("event_link",)
    inlines = [AttemptInline]

    def get_queryset(self, request):
        deliveries = super().get_queryset(request).select_related("event", "endpoint")
        endpoints = scoped_endpoints(request.GET)
        if endpoints is not None:
            deliveries = deliveries.filter(endpoint_id__in=endpoints)
        return with_last_attempt(deliveries)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        return (queryset.filter(delivery_search(term)) if term else queryset), False

    @admin.display(description="event")
    def event_link(self, delivery):
        url = admin_url("events_event_change", delivery.event_id)
        return format_html('<a href="{}">{}</a>', url, delivery.event_id)

    @admin.display(description="event")
    def event_cell(self, delivery):
        event = delivery.event
        return format_html(
            "{}<br><small>{}<br>{}</small>",
            self.event_link(delivery),
            event.type,
            event.resource_id,
        )

    @admin.display(description="endpoint")
    def endpoint_cell(self, delivery):
        return format_html("{}<br>{}", delivery.endpoint_id, url_shown(delivery.endpoint.url))

    @admin.display(description="status", ordering="status")
    def status_cell(self, delivery):
        # A failure profile's fault stacked here, not a column of its own: the list keeps its
        # seven columns at 1,280 px.
        injected = format_html("<br>injected: {}", delivery.injected) if delivery.injected else ""
        return format_html(
            "{}<br><small>{} attempts{}</small>", delivery.status, delivery.attempt_count, injected
        )

    @admin.display(description="last answer")
    def last_answer(self, delivery):
        """The last attempt's HTTP status and error (never the receiver's body: on its page)."""
        if delivery.last_status is None and not delivery.last_error_text:
            return "—"
        status = f"HTTP {delivery.last_status}" if delivery.last_status else "no response"
        error = (delivery.last_error_text or "")[:ERROR_SHOWN]
        return format_html("{}<br><small>{}</small>", status, error)


@admin.register(DeadLetter)
class DeadLetterAdmin(DeliveryAdmin):
    list_display = (
        "id",
        "event_cell",
        "endpoint_cell",
        "status_cell",
        "last_answer",
        "created",
    )
    list_filter = (EndpointFilter, ("created", CreatedWindowFilter), DeliveryModeFilter)
    # Newest event first, read in order from delivery_dead_letter (event, endpoint).
    ordering = ("-event_id", "-endpoint_id")
    actions = [resend_dead_letters]

    def has_requeue_permission(self, request):
        return user_may(request, "webhooks.requeue_deadletter")

    def get_queryset(self, request):
        return super().get_queryset(request).filter(status=Delivery.Status.DEAD_LETTERED)
