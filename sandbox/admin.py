"""The merchant's page gets the test-data reset button (docs/sandbox.md "Reset"); merchants'
test-mode failure profiles have their own list (docs/sandbox.md "Failure profiles")."""

from django import forms
from django.contrib import admin

from accounts.models import Merchant
from backoffice.extensions import AdminExtension, extend_admin
from backoffice.toolkit import ConfirmForm, ObjectAction
from sandbox.models import FailureProfile
from sandbox.profiles import SHARES, WEBHOOK_SHARES, profile_set
from sandbox.reset import sandbox_reset


class ResetForm(ConfirmForm):
    webhook_endpoints = forms.BooleanField(
        required=False, label="Also delete its test webhook endpoints"
    )


def reset_test_data(request, merchant: Merchant, data) -> str:
    result = sandbox_reset(merchant=merchant, webhook_endpoints=data["webhook_endpoints"])
    deleted = ", ".join(f"{count} {kind}" for kind, count in result.deleted.items() if count)
    left = "" if result.complete else " Some rows are left (in flight or out of time): run again."
    return f"Reset test data: deleted {deleted or 'nothing'}.{left}"


RESET = ObjectAction(
    "reset-test-data",
    "Reset test data",
    "accounts.change_merchant",  # what may change the merchant may clear its sandbox
    reset_test_data,
    ResetForm,
)

extend_admin(Merchant, AdminExtension(object_actions=(RESET,)))


SETTABLE = (*SHARES, "latency_ms", *WEBHOOK_SHARES, "delay_seconds", "seed")


@admin.register(FailureProfile)
class FailureProfileAdmin(admin.ModelAdmin):
    """Set as the API sets it (sandbox.profiles.profile_set): its sequence starts again."""

    list_display = ("merchant", *SHARES, "latency_ms", *WEBHOOK_SHARES, "draws", "updated")
    fields = ("merchant", *SETTABLE, "draws", "webhook_draws", "updated")
    readonly_fields = ("draws", "webhook_draws", "updated")
    raw_id_fields = ("merchant",)

    def save_model(self, request, obj, form, change):
        values = {name: form.cleaned_data[name] for name in SETTABLE}
        obj.pk = profile_set(merchant=obj.merchant, **values).pk
