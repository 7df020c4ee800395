"""Support staff on connector accounts (docs/processors.md "In the back office"): the list, the
add form whose keys are write-only, Rotate credentials and Revoke, each through
processors.connector_accounts, as `manage.py connector_account` is. And the processor's
references on the payment's and the refund's pages (backoffice.extensions: processors is
above payments and refunds)."""

from django import forms
from django.contrib import admin
from django.utils.html import format_html, format_html_join

from backoffice.extensions import AdminExtension, extend_admin
from backoffice.toolkit import ConfirmForm, ObjectAction, ObjectActionsAdmin, admin_url, utc
from payments.models import Payment
from processors.connector_accounts import (
    account_create,
    account_revoke,
    account_rotate,
    credential_problems,
    given_credentials,
    routes_naming,
    webhook_url,
)
from processors.models import ConnectorAccount, ProcessorObject
from processors.objects import linked
from refunds.models import Refund
from webhooks.crypto import decrypt_secret

SET_CREDENTIALS = "processors.set_credentials_connectoraccount"
SHOWN_CHARACTERS = 4  # of a stored credential: enough to tell which one is set


def secret_input(label: str, help_text: str) -> forms.CharField:
    """A write-only credential: a password input never filled back, even on a form error."""
    return forms.CharField(
        label=label,
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=help_text,
    )


class CredentialFields(forms.Form):
    secret_key = secret_input("Secret key", "sk_live_… (or a restricted key, rk_live_…)")
    publishable_key = secret_input("Publishable key", "pk_live_…: the payer's card fields use it")
    webhook_secret = secret_input(
        "Webhook signing secret",
        "whsec_…: shown by the processor once its webhook endpoint is set to this account's "
        "webhook URL; may be entered later with Rotate credentials",
    )

    def given(self) -> dict[str, str]:
        return given_credentials(
            **{name: self.cleaned_data.get(name) for name in CredentialFields.base_fields}
        )


class HttpsURLField(forms.URLField):
    """An address typed without a scheme is https (Django 6's default, said now)."""

    def __init__(self, **kwargs):
        super().__init__(assume_scheme="https", **kwargs)


class AccountAddForm(CredentialFields, forms.ModelForm):
    class Meta:
        model = ConnectorAccount
        fields = ("processor", "name", "merchant", "api_base")
        # Meta, not a declared field: the admin's change page builds the field from here
        field_classes = {"api_base": HttpsURLField}

    def clean(self):
        cleaned = super().clean()
        given = self.given()
        for name in ("secret_key", "publishable_key"):
            if name not in given:
                self.add_error(name, "Needed to create an account.")
        processor = cleaned.get("processor")
        for name, problem in credential_problems(processor, given).items() if processor else ():
            self.add_error(name, problem)
        return cleaned


class LiveConfirmForm(ConfirmForm):
    """A connector account serves live payments: its actions need "live" typed."""

    def __init__(self, *args, live: bool, **kwargs):
        super().__init__(*args, live=True, **kwargs)


class RotateForm(CredentialFields, LiveConfirmForm):
    def clean(self):
        cleaned = super().clean()
        if not self.given():
            raise forms.ValidationError("Enter at least one credential to replace.")
        return cleaned


def rotate(request, account: ConnectorAccount, data) -> str:
    replaced = account_rotate(
        account, **{name: data[name] for name in CredentialFields.base_fields}
    )
    kept = " (the previous webhook secret stays valid 24 h)" if "webhook_secret" in replaced else ""
    return f"Replaced {', '.join(replaced)}{kept}."


def revoke(request, account: ConnectorAccount, data) -> str:
    routes = account_revoke(account)
    named = "; ".join(f"{r.merchant_id} {r.method_type} {r.currency}" for r in routes)
    return f"Revoked. Routes naming it now answer no_route: {named or 'none'}."


ROTATE = ObjectAction(
    "rotate", "Rotate credentials", SET_CREDENTIALS, rotate, RotateForm, lambda a: a.active
)
REVOKE = ObjectAction(
    "revoke",
    "Revoke",
    "processors.change_connectoraccount",
    revoke,
    LiveConfirmForm,
    lambda a: a.active,
)


def ending(encrypted: str):
    """ "set, ending …4242": a stored credential as a page may show it."""
    if not encrypted:
        return "not set"
    return f"set, ending …{decrypt_secret(encrypted)[-SHOWN_CHARACTERS:]}"


@admin.register(ConnectorAccount)
class ConnectorAccountAdmin(ObjectActionsAdmin):
    list_display = ("id", "name", "processor", "owner", "secret_key_ending", "status", "created")
    list_filter = ("processor", ("revoked_at", admin.EmptyFieldListFilter))
    list_select_related = ("merchant",)
    search_fields = ("=id", "name", "=merchant__id")
    search_help_text = "An account id (cacct_…), a name or a merchant id (mch_…)."
    form = AccountAddForm
    add_fields = ("processor", "name", "merchant", "api_base", *CredentialFields.base_fields)
    shown_fields = (
        "id",
        "name",
        "processor",
        "owner",
        "api_base",
        "status",
        "credentials",
        "webhook_endpoint",
        "routes",
        "created",
        "updated",
    )
    object_actions = (ROTATE, REVOKE)

    def get_form(self, request, obj=None, **kwargs):
        if obj is not None:  # the change page edits the name only; keys go through Rotate
            kwargs["form"] = forms.ModelForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return self.add_fields if obj is None else self.shown_fields

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else tuple(f for f in self.shown_fields if f != "name")

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["name"])
        else:
            account_create(obj, **form.given())

    def has_add_permission(self, request):
        return super().has_add_permission(request) and request.user.has_perm(SET_CREDENTIALS)

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, never deleted: payments and events still name it

    @admin.display(description="owner", ordering="merchant")
    def owner(self, account: ConnectorAccount):
        return account.merchant.name if account.merchant_id else "platform"

    @admin.display(description="secret key")
    def secret_key_ending(self, account: ConnectorAccount):
        return f"…{account.secret_key_last4}"

    @admin.display(description="status", ordering="revoked_at")
    def status(self, account: ConnectorAccount):
        return f"revoked {utc(account.revoked_at)}" if account.revoked_at else "active"

    @admin.display(description="credentials")
    def credentials(self, account: ConnectorAccount):
        previous = account.previous_webhook_secret_expires_at
        rows = [
            ("secret key", f"set, ending …{account.secret_key_last4}"),
            ("publishable key", ending(account.publishable_key_encrypted)),
            ("webhook secret", ending(account.webhook_secret_encrypted)),
        ]
        if account.previous_webhook_secret_encrypted and previous:
            rows.append(("previous webhook secret", f"accepted until {utc(previous)}"))
        return format_html(
            "<table>{}</table>", format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows)
        )

    @admin.display(description="webhook URL")
    def webhook_endpoint(self, account: ConnectorAccount):
        return format_html(
            "<code>{}</code><br><small>Enter it as the webhook endpoint in the processor's "
            "dashboard (docs/going-live.md), then its signing secret here with Rotate "
            "credentials.</small>",
            webhook_url(account),
        )

    @admin.display(description="routes naming it")
    def routes(self, account: ConnectorAccount):
        rows = ((r.merchant_id, r.method_type, r.currency) for r in routes_naming(account))
        return format_html_join(", ", "{} {} {}", rows) or "none"


STRIPE_DASHBOARD = "https://dashboard.stripe.com"
DASHBOARD_PAGES = {"pi_": "payments", "ch_": "payments", "py_": "payments", "re_": "refunds"}


def dashboard_link(account: ConnectorAccount, processor_id: str):
    """The processor's id, linked to its page in Stripe's dashboard (test objects under
    /test/); as plain text for an account on another API (an emulator has no dashboard)."""
    page = DASHBOARD_PAGES.get(processor_id[:3])
    if account.api_base or page is None:
        return format_html("<code>{}</code>", processor_id)
    mode = (
        "/test" if decrypt_secret(account.publishable_key_encrypted).startswith("pk_test_") else ""
    )
    url = f"{STRIPE_DASHBOARD}{mode}/{page}/{processor_id}"
    return format_html('<a href="{}" rel="noreferrer"><code>{}</code></a>', url, processor_id)


def references(kind: str, our_id: str, *, extra_keys: tuple[str, ...] = ()):
    """The processor's ids behind one of ours, each linked, with its connector account."""
    link: ProcessorObject | None = linked(kind, our_id)
    if link is None:
        return "—"
    ids = [link.processor_id, *(link.extra[key] for key in extra_keys if link.extra.get(key))]
    account_url = admin_url("processors_connectoraccount_change", link.account_id)
    return format_html(
        '{}<br><small>through <a href="{}">{}</a></small>',
        format_html_join(" ", "{}", ((dashboard_link(link.account, i),) for i in ids)),
        account_url,
        link.account,
    )


@admin.display(description="processor")
def payment_references(payment: Payment):
    return references(ProcessorObject.Kind.PAYMENT, payment.id, extra_keys=("charge",))


@admin.display(description="processor")
def refund_references(refund: Refund):
    return references(ProcessorObject.Kind.REFUND, refund.id)


extend_admin(Payment, AdminExtension(readonly_fields=(payment_references,)))
extend_admin(Refund, AdminExtension(readonly_fields=(refund_references,)))
