from django import forms
from django.contrib import admin
from django.db import transaction
from django.template.response import TemplateResponse
from django.utils.cache import add_never_cache_headers

from accounts.models import ApiKey, Merchant
from accounts.services import api_key_issue, api_key_revoke
from backoffice.toolkit import GuardedActionsAdmin, ObjectActionsAdmin, confirmed_action, user_may
from infra import revision

# The app list beside every page took 300 px from the lists (issue 24 item 4: they must fit
# 1,280 px); the home page and the breadcrumbs still lead everywhere.
admin.site.enable_nav_sidebar = False

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
class MerchantAdmin(ObjectActionsAdmin):
    """payments adds the merchant's routes and checks its pricing (payments/admin.py);
    sandbox its test-data reset button (sandbox/admin.py)."""

    list_display = ("id", "name", "email", "transaction_limit", "created")
    search_fields = ("id", "name", "email")
    readonly_fields = ("id", "created")
    inlines = [ApiKeyInline]

    # Each process caches the merchant with its keys (accounts/keycache.py). The change and
    # delete views run in a transaction; the delete action does not.
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        revision.changed()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        revision.changed()

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            super().delete_queryset(request, queryset)
            revision.changed()


class IssueKeyForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ("merchant", "kind", "livemode", "expires_at")


@confirmed_action(
    permission="revoke",
    description="Revoke selected keys",
    title="Revoke API keys",
    live=lambda keys: keys.filter(livemode=True).exists(),
)
def revoke_keys(modeladmin, request, api_key):
    api_key_revoke(api_key=api_key)
    return "Revoked the key."


@admin.register(ApiKey)
class ApiKeyAdmin(GuardedActionsAdmin):
    """Adding a key issues it through the service and shows the secret once, in the response
    page itself: never in a message (Django's message cookie is signed, not encrypted)."""

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
        for field in ApiKey._meta.concrete_fields:  # the admin logs and shows `obj`
            setattr(obj, field.attname, getattr(issued.api_key, field.attname))
        obj.issued_secret = issued.secret  # for response_add only; never stored

    def response_add(self, request, obj, post_url_continue=None):
        context = {
            **self.admin_site.each_context(request),
            "title": "API key issued",
            "opts": self.opts,
            "api_key": obj,
            "secret": obj.issued_secret,
        }
        response = TemplateResponse(request, "admin/accounts/apikey/issued.html", context)
        add_never_cache_headers(response)  # no cache, proxy or back button keeps the secret
        return response

    def has_delete_permission(self, request, obj=None):
        return False  # keys are revoked, never deleted: their history stays

    def has_revoke_permission(self, request):
        return user_may(request, "accounts.revoke_apikey")
