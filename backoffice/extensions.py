"""A model's admin page is registered once, by the room that owns the model; a higher room adds
to it here (it may import the lower room, never the other way): the payment's page gets the
refunds inline, the Refund button and the timeline from `refunds`, the merchant's page its
routes and pricing check from `payments`, the payment's and refund's processor references from
`processors`. Each room's admin.py calls `extend_admin` when the
admin autodiscovers it, before any page is served; the page reads its additions at request
time, so neither INSTALLED_APPS order nor import order changes what it shows."""

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import admin


@dataclass(frozen=True)
class AdminExtension:
    inlines: tuple = ()
    object_actions: tuple = ()  # backoffice.toolkit.ObjectAction, offered before the page's own
    form_mixins: tuple[type, ...] = ()  # e.g. a clean_<field> the owning room cannot write
    hidden_fields: tuple[str, ...] = ()  # the page's own fields an addition replaces
    # Read-only fields added below the page's own: callables of the object (admin.display).
    readonly_fields: tuple[Callable, ...] = ()
    change_form_template: str | None = None
    context: Callable | None = None  # (request, obj) -> extra context of the object's page


_extensions: dict[type, list[AdminExtension]] = {}


def extend_admin(model: type, extension: AdminExtension) -> None:
    _extensions.setdefault(model, []).append(extension)


class ExtensibleAdmin(admin.ModelAdmin):
    """A ModelAdmin whose page carries what other rooms added for its model."""

    def extensions(self) -> list[AdminExtension]:
        return _extensions.get(self.model, [])

    def extended(self, name: str) -> tuple:
        return tuple(item for extension in self.extensions() for item in getattr(extension, name))

    def get_inlines(self, request, obj):
        return [*super().get_inlines(request, obj), *self.extended("inlines")]

    def get_fields(self, request, obj=None):
        hidden = self.extended("hidden_fields")
        fields = [field for field in super().get_fields(request, obj) if field not in hidden]
        return [
            *fields,
            *(field for field in self.extended("readonly_fields") if field not in fields),
        ]

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), *self.extended("readonly_fields")]

    def get_form(self, request, obj=None, **kwargs):
        mixins = self.extended("form_mixins")
        if mixins:
            form = kwargs.get("form", self.form)
            kwargs["form"] = type(form)(form.__name__, (*mixins, form), {})
        return super().get_form(request, obj, **kwargs)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        contributors = [e.context for e in self.extensions() if e.context]
        if contributors:
            obj = self.get_object(request, admin.utils.unquote(object_id))
            extra_context = dict(extra_context or {})
            for contribute in contributors:
                extra_context.update(contribute(request, obj))
        return super().change_view(request, object_id, form_url, extra_context)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        response = super().render_change_form(request, context, add, change, form_url, obj)
        templates = [e.change_form_template for e in self.extensions() if e.change_form_template]
        if change and templates:
            response.template_name = templates[-1]
        return response
