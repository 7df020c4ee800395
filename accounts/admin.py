from django import forms
from django.contrib import admin, messages

from accounts.models import ApiKey, Merchant
from accounts.services import api_key_issue, api_key_revoke

KEY_FIELDS = (
    "id",
    "merchant",
    "kind",
    "livemode",
    "prefix",
    "last4",
    "api_version",
    "created",
    "last_used_at",
    "revoked_at",
    "expires_at",
    "pepper_version",
)


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    fields = ("id", "kind", "livemode", "last4", "created", "last_used_at", "revoked_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Merchant)
class MerchantAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "email", "transaction_limit", "created")
    search_fields = ("id", "name", "email")
    readonly_fields = ("id", "created")
    inlines = [ApiKeyInline]


class IssueKeyForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ("merchant", "kind", "livemode", "expires_at")


@admin.action(description="Revoke selected keys")
def revoke_keys(modeladmin, request, queryset):
    for api_key in queryset:
        api_key_revoke(api_key=api_key)
    modeladmin.message_user(request, f"Revoked {queryset.count()} key(s).")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Adding a key issues it through the service and shows the secret once, in a message."""

    list_display = (
        "id",
        "merchant",
        "kind",
        "livemode",
        "last4",
        "created",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("kind", "livemode")
    search_fields = ("id", "merchant__id", "merchant__name", "last4")
    actions = [revoke_keys]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = IssueKeyForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return IssueKeyForm.Meta.fields if obj is None else KEY_FIELDS

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else KEY_FIELDS

    def save_model(self, request, obj, form, change):
        if change:
            return
        issued = api_key_issue(
            merchant=obj.merchant, kind=obj.kind, livemode=obj.livemode, expires_at=obj.expires_at
        )
        obj.pk = issued.api_key.pk
        messages.warning(
            request,
            f"New key {issued.api_key.id}: {issued.secret} — copy it now; "
            "it is shown only once and cannot be recovered.",
        )

    def has_delete_permission(self, request, obj=None):
        return False  # keys are revoked, never deleted: their history stays
