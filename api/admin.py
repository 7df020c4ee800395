"""The request log in the back office: read-only, found by request id or merchant."""

from django.contrib import admin

from api.models import RequestLogEntry
from backoffice.toolkit import CappedPaginator, ReadOnlyAdmin


@admin.register(RequestLogEntry)
class RequestLogAdmin(ReadOnlyAdmin):
    list_display = ("id", "merchant_id", "livemode", "method", "path", "status", "error_code",
                    "duration_ms", "created")  # fmt: skip
    # Exact matches only: each is an index lookup, never a scan of every merchant's requests.
    search_fields = ("=id", "=merchant_id")  # shows the box; get_search_results reads it
    search_help_text = "A request id (req_…) or a merchant id (mch_…); exact."
    show_full_result_count = False
    paginator = CappedPaginator  # a month of every merchant's requests is never counted
    ordering = ("-id",)

    def get_search_results(self, request, queryset, search_term):
        """One condition, by the id's prefix: Django's OR of both fields read every entry."""
        term = search_term.strip()
        if not term:
            return queryset, False
        field = "merchant_id" if term.startswith("mch_") else "pk"
        return queryset.filter(**{field: term}), False
