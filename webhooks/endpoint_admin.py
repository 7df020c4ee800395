"""Support staff on webhook endpoints: status (disabled after sustained failure), health
counters, the record of warnings, disablings and recoveries, and the Re-enable and Recover
buttons, each through the services the API calls (docs/webhooks.md "Endpoint health and
recovery"). Registered by webhooks/admin.py."""

from django import forms
from django.conf import settings
from django.contrib import admin
from django.db.models import Q
from django.utils import timezone
from django.utils.html import format_html

from backoffice.toolkit import ConfirmForm, FixedChoicesFilter, ObjectAction, ReadOnlyAdmin
from webhooks.health import health_of
from webhooks.models import StatusChange, WebhookEndpoint
from webhooks.services import endpoint_enable, endpoint_recover

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

    def clean_since(self):
        since = self.cleaned_data["since"]
        if since > timezone.now():
            raise forms.ValidationError("Must not be in the future.")
        return since


def staff(request) -> str:
    return f"staff:{request.user.get_username()}"


def enable(request, endpoint, data) -> str:
    endpoint_enable(endpoint=endpoint, actor=staff(request))
    return f"Re-enabled {endpoint.id}: held retries are due now."


def recover(request, endpoint, data) -> str:
    recovery = endpoint_recover(endpoint=endpoint, since=data["since"], actor=staff(request))
    more = " More are left: run it again." if recovery.has_more else ""
    return f"Recovered {len(recovery.event_ids)} events of {endpoint.id}.{more}"


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
    choices_of = ("enabled", "disabled", "deleted")

    def queryset(self, request, queryset):
        chosen = {
            "enabled": Q(deleted_at__isnull=True, disabled_at__isnull=True),
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
        "status",
        "disabled_at",
        "deleted_at",
        "delivery_health",
    )
    readonly_fields = ("status", "delivery_health")
    inlines = [StatusChangeInline]
    object_actions = (ENABLE, RECOVER)

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
            f" since {shown['failing_since']}" if shown["failing_since"] else "",
            shown["last_success_at"] or "never",
            shown["last_failure_at"] or "never",
            (shown["last_failure_error"] or "")[:ERROR_SHOWN],
        )


def window_text(window: dict) -> str:
    if not window["attempts"]:
        return "no attempt"
    return f"{window['delivered']}/{window['attempts']} delivered"
