"""What every room's admin pages share (docs/back-office.md): lists that never count or scan a
big table, and actions with a permission of their own, an intermediate confirmation page (typed
confirmation when live-mode objects are touched) and an admin log entry per object. Lives in
the back office's own room, below every room with an admin, so each can use it (the merchant
filter, which needs the Merchant model, is accounts.merchantfirst)."""

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.module_loading import import_string

from backoffice.extensions import ExtensibleAdmin

# Rows a big list counts at most (ten pages of 100); past it, narrow with search or filters.
# Counting costs up to this many index rows on every page view: 10,000 took the big
# merchant's week of payments to 66-161 ms at 1M payments (docs/data.md).
COUNT_CAP = 1_000
CONFIRMED = "confirmed"  # the field the confirmation page posts back
LIVE_WORD = "live"  # typed to confirm an action on live-mode objects


class CappedPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows (COUNT over a LIMIT subquery), so a list of millions
    of payments never runs a full COUNT(*); pages past the cap are reached by narrowing."""

    @property
    def count(self):
        if not hasattr(self, "_capped_count"):
            self._capped_count = self.object_list.order_by()[: COUNT_CAP + 1].count()
        return self._capped_count


class FixedChoicesFilter(admin.SimpleListFilter):
    """Choices from the code's catalogue, never a SELECT DISTINCT over a big table."""

    choices_of: tuple[str, ...] = ()

    def lookups(self, request, model_admin):
        return [(choice, choice) for choice in self.choices_of]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(**{self.parameter_name: value}) if value else queryset


def utc(moment) -> str:
    """A time as the admin shows it everywhere: to the second, with its zone."""
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def admin_url(name: str, pk: str) -> str:
    """The admin's URL `name` for the object `pk`, quoted as the admin quotes ids ("_" is
    its escape character, and every id here has one)."""
    return reverse(f"admin:{name}", args=[quote(pk)])


def user_may(request, permission: str) -> bool:
    return request.user.has_perm(permission)


class ConfirmForm(forms.Form):
    """Posted back by the confirmation page; for live-mode objects the agent must type
    LIVE_WORD, so a live key is never revoked by a stray click."""

    typed = forms.CharField(required=False, label=f'Type "{LIVE_WORD}" to confirm')

    def __init__(self, *args, live: bool, obj=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.live = live
        self.obj = obj  # the object of an object's action, for inputs that depend on it
        if not live:
            del self.fields["typed"]

    def clean_typed(self):
        typed = self.cleaned_data["typed"].strip().lower()
        if typed != LIVE_WORD:
            raise forms.ValidationError(f'Type "{LIVE_WORD}": live-mode objects are affected.')
        return typed


class GuardedActionsAdmin(admin.ModelAdmin):
    """Actions the user may not run are hidden (each action names its permission), and
    posting one anyway is 403, where Django would only answer "no action selected"."""

    def changelist_view(self, request, extra_context=None):
        action = request.POST.get("action")
        if request.method == "POST" and action in self._declared_action_names():
            if action not in self.get_actions(request):
                raise PermissionDenied
        return super().changelist_view(request, extra_context)

    def _declared_action_names(self) -> set[str]:
        return {getattr(action, "__name__", action) for action in self.actions or ()}


def confirmation(modeladmin, request, queryset, *, live: bool):
    """The bound ConfirmForm when the confirmation page was posted back, else None."""
    if CONFIRMED not in request.POST:
        return None
    return ConfirmForm(request.POST, live=live)


def confirmation_page(modeladmin, request, queryset, *, action: str, title: str, form):
    """The intermediate page for a changelist action (like Django's delete confirmation)."""
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "objects": list(queryset),
        "action": action,
        "form": form,
        "confirmed_field": CONFIRMED,
        "opts": modeladmin.model._meta,
        "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/confirm_action.html", context)


def confirmed_action(*, permission: str, description: str, title: str, live=lambda qs: False):
    """A changelist action that runs `perform(modeladmin, request, obj) -> str` on each
    selected object once the agent confirmed, writes that string to the admin log, and
    reports how many were done. `permission` is a ModelAdmin `has_<permission>_permission`."""

    def wrap(perform):
        @admin.action(description=description, permissions=[permission])
        def action(modeladmin, request, queryset):
            form = confirmation(modeladmin, request, queryset, live=live(queryset))
            if form is None or not form.is_valid():
                form = form or ConfirmForm(live=live(queryset))
                return confirmation_page(
                    modeladmin, request, queryset, action=perform.__name__, title=title, form=form
                )
            done = list(queryset)
            for obj in done:
                modeladmin.log_change(request, obj, perform(modeladmin, request, obj))
            modeladmin.message_user(request, f"{title}: {len(done)} done.")
            return None

        action.__name__ = perform.__name__
        action.perform = perform  # for the same action as a button on one object's page
        return action

    return wrap


@dataclass(frozen=True)
class ObjectAction:
    """A button on an object's page: it opens a confirmation page (with `form`'s inputs), whose
    posting runs `perform(request, obj, cleaned_data) -> log message` through a service."""

    name: str  # the URL segment under the object's page
    label: str
    permission: str  # "app_label.codename"
    perform: Callable
    form: type[ConfirmForm] = ConfirmForm
    offered: Callable = lambda obj: True  # whether the object's state allows it at all


@cache
def refusals() -> tuple[type[Exception], ...]:
    """The exceptions a service refuses with (settings BACKOFFICE_REFUSALS: the API's
    ServiceError, which this room may not import); each has a `code` and a `message`."""
    return tuple(import_string(name) for name in settings.BACKOFFICE_REFUSALS)


class ObjectActionsAdmin(GuardedActionsAdmin, ExtensibleAdmin):
    """Adds `object_actions` to the object's page, each permission-checked (403), confirmed,
    and written to the admin log; a service's refusal is shown on the confirmation page."""

    object_actions: tuple[ObjectAction, ...] = ()
    change_form_template = "admin/object_actions_change_form.html"

    def get_urls(self):
        own = [
            path(
                f"<path:object_id>/{action.name}/",
                self.admin_site.admin_view(partial(self.object_action_view, action=action)),
                name=self._action_url_name(action),
            )
            for action in self.all_object_actions()
        ]
        return own + super().get_urls()

    def all_object_actions(self) -> tuple[ObjectAction, ...]:
        return (*self.extended("object_actions"), *self.object_actions)

    def _action_url_name(self, action: ObjectAction) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{action.name}"

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        buttons = [
            (action, admin_url(self._action_url_name(action), obj.pk))
            for action in self.all_object_actions()
            if obj is not None and user_may(request, action.permission) and action.offered(obj)
        ]
        extra_context = {**(extra_context or {}), "object_action_buttons": buttons}
        return super().change_view(request, object_id, form_url, extra_context)

    def object_action_view(self, request, object_id, action: ObjectAction):
        if not user_may(request, action.permission):
            raise PermissionDenied
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404
        data = request.POST if request.method == "POST" else None
        form = action.form(data, live=bool(getattr(obj, "livemode", False)), obj=obj)
        if form.is_valid():
            try:
                message = action.perform(request, obj, form.cleaned_data)
            except refusals() as refused:
                form.add_error(None, f"Refused ({refused.code}): {refused.message}")
            else:
                self.log_change(request, obj, message)
                self.message_user(request, message)
                return redirect(
                    admin_url(f"{self.opts.app_label}_{self.opts.model_name}_change", obj.pk)
                )
        context = {
            **self.admin_site.each_context(request),
            "title": f"{action.label}: {obj}",
            "opts": self.opts,
            "object": obj,
            "action": action,
            "form": form,
        }
        return TemplateResponse(request, "admin/confirm_object_action.html", context)


class ReadOnlyAdmin(ObjectActionsAdmin):
    """Nothing added, changed or deleted by hand: changes go through the rooms' services, from
    the page's actions (and an attempt's history is kept: spec "Retries and dead letter" 5)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
