"""Lists over a big table that ask for a merchant first (docs/back-office.md "Finding"): the
merchant filter reads the merchants' own small table, so it lives with the Merchant model; the
rest of the admin toolkit is backoffice.toolkit."""

import datetime
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.options import IS_POPUP_VAR, TO_FIELD_VAR, IncorrectLookupParameters
from django.contrib.admin.views.main import (
    ALL_VAR,
    ERROR_FLAG,
    IS_FACETS_VAR,
    ORDER_VAR,
    PAGE_VAR,
    SEARCH_VAR,
)
from django.http import HttpResponseBadRequest, HttpResponseRedirect
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.html import format_html

from accounts.models import Merchant
from api.ids import created_window, is_id

MERCHANT_PARAMETER = "merchant"
MODE_PARAMETER = "livemode"
# A changelist's query parameters that are not filters (search, page, ordering, popups...).
NOT_FILTERS = {ALL_VAR, ORDER_VAR, PAGE_VAR, SEARCH_VAR, ERROR_FLAG, IS_POPUP_VAR, TO_FIELD_VAR}
NOT_FILTERS |= {IS_FACETS_VAR}


class MerchantFilter(admin.SimpleListFilter):
    """Merchants listed from their own (small) table, never a DISTINCT over a big one."""

    title = parameter_name = MERCHANT_PARAMETER
    field = "merchant_id"  # the list's path to its merchant

    def lookups(self, request, model_admin):
        return [(m.id, f"{m.name} ({m.id})") for m in Merchant.objects.order_by("name")[:200]]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(**{self.field: value}) if value else queryset


class ModeFilter(admin.SimpleListFilter):
    """A merchant's list one mode at a time, live unless test is chosen (no "both"): the
    (merchant, livemode, id desc) indexes then give its page in order. Both modes at once
    walked the primary key filtering on the merchant, every newer row of every merchant for a
    small one's page (1.3 s for its events at 10M payments, docs/data.md "Reads at scale")."""

    title = "mode"
    parameter_name = MODE_PARAMETER
    field = "livemode"
    LIVE, TEST = "1", "0"

    def lookups(self, request, model_admin):
        return [(self.LIVE, "live"), (self.TEST, "test")]

    def livemode(self) -> bool:
        return self.value() != self.TEST

    def choices(self, changelist):
        chosen = self.LIVE if self.livemode() else self.TEST
        for value, title in self.lookup_choices:
            yield {
                "selected": value == chosen,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": title,
            }

    def queryset(self, request, queryset):
        return queryset.filter(**{self.field: self.livemode()})


class CreatedWindowFilter(admin.DateFieldListFilter):
    """The date choices (today, past 7 days, this month, this year) of a `created` whose ids
    are ULIDs made with it, as an id window (api.ids.created_window): the list's index
    (merchant, livemode, id desc) or (endpoint, id desc) starts and stops at the window, and
    the capped count reads the window's rows, not every row of the list that is older. On
    `created` alone the planner read the window's rows of every merchant (payment_created)
    or, with no index there, all of an endpoint's deliveries (docs/data.md "Reads at scale")."""

    def queryset(self, request, queryset):
        since = self._moment(self.lookup_kwarg_since)
        until = self._moment(self.lookup_kwarg_until)
        if since is None and until is None:
            return super().queryset(request, queryset)  # "No date" / "Has date", if nullable
        return queryset.filter(created_window(self.field.model._meta.pk.prefix, since, until))

    def _moment(self, name: str) -> datetime.datetime | None:
        value = self.used_parameters.get(name)
        value = value[-1] if isinstance(value, list) else value
        if not value:
            return None
        moment = parse_datetime(value)
        if moment is None and (day := parse_date(value)) is not None:
            moment = datetime.datetime.combine(day, datetime.time())
        if moment is None:
            raise IncorrectLookupParameters(f"{name}: not a date")
        return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


class MerchantFirstAdmin(admin.ModelAdmin):
    """A list over a big table (payments, refunds, events, deliveries) offers its filters
    only once a merchant is chosen (or another parameter of `scoped_by`, each naming one
    merchant's rows): a filter then reads that merchant's rows through the (merchant, livemode,
    ...) indexes the API's lists use, never every merchant's (docs/back-office.md "Finding").
    A filter typed into the URL without one is refused (400), as Django refuses any lookup
    that is not a list filter."""

    merchant_filter: type[admin.SimpleListFilter] = MerchantFilter
    scoped_by: tuple[str, ...] = (MERCHANT_PARAMETER,)

    def get_list_filter(self, request):
        if self._scoped(request):
            return (self.merchant_filter, *self.list_filter)
        return (self.merchant_filter, *(f for f in self.list_filter if self._scopes(f)))

    def changelist_view(self, request, extra_context=None):
        # A merchant's id typed into the search box opens its list (one mode, newest first,
        # its filters): as a search it read both modes' rows by primary key (issue 22).
        term = request.GET.get(SEARCH_VAR, "").strip()
        if is_id(term, "mch"):
            return HttpResponseRedirect(f"{request.path}?{urlencode({MERCHANT_PARAMETER: term})}")
        # Django applies any lookup on a local field (currency=jpy) even when not offered.
        if not self._scoped(request) and set(request.GET) - NOT_FILTERS - set(self.scoped_by):
            return HttpResponseBadRequest("Choose a merchant first: filters narrow one merchant.")
        return super().changelist_view(request, extra_context)

    def _scoped(self, request) -> bool:
        return any(request.GET.get(name) for name in self.scoped_by)

    def _scopes(self, list_filter) -> bool:
        return getattr(list_filter, "parameter_name", None) in self.scoped_by


@admin.display(description="merchant", ordering="merchant__name")
def merchant_name(obj) -> str:
    """The merchant's name, its id below it in small type (two merchants may share a name;
    the id is what the merchant filter and the search box take): "name (mch_…)" on one line
    took 300 px of a list that must fit 1,280."""
    return format_html("{}<br><small>{}</small>", obj.merchant.name, obj.merchant_id)
