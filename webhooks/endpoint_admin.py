"""Support staff on webhook endpoints: status (disabled after sustained failure), health
counters, the record of warnings, disablings and recoveries, and the Re-enable and Recover
buttons, each through the services the API calls (docs/webhooks.md "Endpoint health and
recovery"). Registered by webhooks/admin.py."""

import datetime

from django import forms
from django.conf import settings
from django.contrib import admin
from django.db.models import Q
from django.utils import timezone
from django.utils.html import format_html

from api.ids import is_id
from backoffice.toolkit import ConfirmForm, FixedChoicesFilter, ObjectAction, ReadOnlyAdmin, utc
from webhooks.health import health_of
from webhooks.models import StatusChange, WebhookEndpoint
from webhooks.recovery import endpoint_recover
from webhooks.serializers import patterns_from_text
from webhooks.services import endpoint_enable, endpoint_pause, endpoint_resume, endpoint_update

ERROR_SHOWN = 120  # characters of the last error shown
URL_SHOWN = 60  # characters of an endpoint's URL in a list (all of it on hover)


def url_shown(url: str):
    """An endpoint's URL cut to fit a list column, the whole of it on hover."""
    shown = url if len(url) <= URL_SHOWN else url[: URL_SHOWN - 1] + "…"
    return format_html('<small title="{}">{}</small>', url, shown)


class StatusChangeInline(admin.TabularInline):
    """The endpoint's warnings, disablings, re-enablings and recoveries, newest first."""

    model = StatusChange
    fields = ("at", "action", "actor", "detail")
    readonly_fields = fields
    ordering = ("-at",)
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class RecoverForm(ConfirmForm):
    since = forms.DateTimeField(
        help_text="UTC, e.g. 2026-11-25 03:00. Events created since then whose delivery to "
        f"this endpoint failed get one more attempt now (at most {settings.WEBHOOK_RECOVER_MAX}"
        " a time: run it again for more)."
    )

    starting_after = forms.CharField(
        required=False,
        max_length=40,
        help_text="An event id (evt_...): go on after it, as the message of the previous run "
        "says. Blank: from the start.",
    )

    def clean_since(self):
        since = self.cleaned_data["since"]
        if since > timezone.now():
            raise forms.ValidationError("Must not be in the future.")
        return since

    def clean_starting_after(self):
        value = self.cleaned_data["starting_after"].strip()
        if value and not is_id(value, "evt"):
            raise forms.ValidationError("Must be an event id (evt_...).")
        return value or None


class EditForm(ConfirmForm):
    """What POST /v1/webhook-endpoints/:id changes; a field left blank is kept."""

    KEEP, ON, OFF = "", "on", "off"

    url = forms.CharField(
        required=False, max_length=2048, help_text="https only; checked by the URL guard."
    )
    description = forms.CharField(required=False, max_length=200)
    enabled_events = forms.CharField(
        required=False,
        max_length=2000,
        help_text="Comma-separated event types or patterns, e.g. payment.*, refund.succeeded",
    )
    ordered_delivery = forms.ChoiceField(
        choices=[(KEEP, "keep as it is"), (ON, "on"), (OFF, "off")], required=False
    )

    def clean_enabled_events(self):
        try:
            return patterns_from_text(self.cleaned_data["enabled_events"])
        except ValueError as bad:
            raise forms.ValidationError(str(bad)) from None


def edit_changes(data: dict) -> dict:
    """EditForm's cleaned data as endpoint_update's changes: only what was filled in."""
    changes = {name: data[name] for name in ("url", "description", "enabled_events")}
    changes = {name: value for name, value in changes.items() if value}
    if data["ordered_delivery"] != EditForm.KEEP:
        changes["ordered_delivery"] = data["ordered_delivery"] == EditForm.ON
    return changes


def staff(request) -> str:
    return f"staff:{request.user.get_username()}"


def enable(request, endpoint, data) -> str:
    endpoint_enable(endpoint=endpoint, actor=staff(request))
    return f"Re-enabled {endpoint.id}: held retries are due now."


def recover(request, endpoint, data) -> str:
    recovery = endpoint_recover(
        endpoint=endpoint,
        since=data["since"],
        starting_after=data["starting_after"],
        actor=staff(request),
    )
    more = ""
    if recovery.has_more:
        more = f" More are left: run it again starting after {recovery.next_starting_after}."
    return f"Recovered {len(recovery.event_ids)} events of {endpoint.id}.{more}"


def edit(request, endpoint, data) -> str:
    endpoint_update(endpoint=endpoint, actor=staff(request), **edit_changes(data))
    return f"Updated {endpoint.id}."


def pause(request, endpoint, data) -> str:
    endpoint_pause(endpoint=endpoint, actor=staff(request))
    return f"Paused {endpoint.id}: its events wait until it is resumed."


def resume(request, endpoint, data) -> str:
    endpoint_resume(endpoint=endpoint, actor=staff(request))
    return f"Resumed {endpoint.id}: its waiting events are due now, oldest first."


def is_live(endpoint) -> bool:
    return endpoint.deleted_at is None


EDIT = ObjectAction(
    "edit",
    "Edit URL, events, ordering",
    "webhooks.change_webhookendpoint",
    edit,
    EditForm,
    offered=is_live,
)
PAUSE = ObjectAction(
    "pause",
    "Pause",
    "webhooks.pause_webhookendpoint",
    pause,
    offered=lambda endpoint: endpoint.status == "enabled",
)
RESUME = ObjectAction(
    "resume",
    "Resume",
    "webhooks.pause_webhookendpoint",
    resume,
    offered=lambda endpoint: endpoint.paused_at is not None and is_live(endpoint),
)
ENABLE = ObjectAction(
    "enable",
    "Re-enable",
    "webhooks.enable_webhookendpoint",
    enable,
    offered=lambda endpoint: endpoint.disabled_at is not None and endpoint.deleted_at is None,
)
RECOVER = ObjectAction(
    "recover",
    "Recover failed events",
    "webhooks.recover_webhookendpoint",
    recover,
    RecoverForm,
    offered=lambda endpoint: endpoint.status == "enabled",
)


class EndpointStatusFilter(FixedChoicesFilter):
    title, parameter_name = "status", "status"
    choices_of = ("enabled", "paused", "disabled", "deleted")

    def queryset(self, request, queryset):
        chosen = {
            "enabled": Q(deleted_at__isnull=True, disabled_at__isnull=True, paused_at__isnull=True),
            "paused": Q(deleted_at__isnull=True, disabled_at__isnull=True, paused_at__isnull=False),
            "disabled": Q(deleted_at__isnull=True, disabled_at__isnull=False),
            "deleted": Q(deleted_at__isnull=False),
        }.get(self.value())
        return queryset.filter(chosen) if chosen else queryset


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ("id", "merchant", "livemode", "url_cell", "status", "created", "disabled_at")
    list_filter = ("livemode", EndpointStatusFilter)
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
        "ordered_delivery",
        "status",
        "paused_at",
        "disabled_at",
        "deleted_at",
        "delivery_health",
    )
    readonly_fields = ("status", "delivery_health")
    inlines = [StatusChangeInline]
    object_actions = (EDIT, PAUSE, RESUME, ENABLE, RECOVER)

    @admin.display(description="url")
    def url_cell(self, endpoint: WebhookEndpoint):
        return url_shown(endpoint.url)

    @admin.display(description="health")
    def delivery_health(self, endpoint: WebhookEndpoint):
        """The counters the API shows (webhooks/health.py): no scan of attempts. (Not named
        `health`: the admin would show the one-to-one's EndpointHealth row instead.)"""
        (shown,) = health_of([endpoint], timezone.now()).values()
        return format_html(
            "last hour: {}; last day: {}<br>{} failures in a row{}<br>"
            "last success: {}; last failure: {} {}",
            window_text(shown["last_hour"]),
            window_text(shown["last_day"]),
            shown["consecutive_failures"],
            f" since {api_time_shown(shown['failing_since'])}" if shown["failing_since"] else "",
            api_time_shown(shown["last_success_at"]),
            api_time_shown(shown["last_failure_at"]),
            (shown["last_failure_error"] or "")[:ERROR_SHOWN],
        )


def api_time_shown(api_time: str | None) -> str:
    """A time as the API writes it (2026-11-23T16:04:33Z) as the admin shows every time."""
    return utc(datetime.datetime.fromisoformat(api_time)) if api_time else "never"


def window_text(window: dict) -> str:
    if not window["attempts"]:
        return "no attempt"
    return f"{window['delivered']}/{window['attempts']} delivered"
