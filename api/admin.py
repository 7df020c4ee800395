"""The request log in the back office: read-only, found by request id or merchant."""

from django.contrib import admin

from api.models import RequestLogEntry
from backoffice.toolkit import ReadOnlyAdmin


@admin.register(RequestLogEntry)
class RequestLogAdmin(ReadOnlyAdmin):
    list_display = ("id", "merchant_id", "livemode", "method", "path", "status", "error_code",
                    "duration_ms", "created")  # fmt: skip
    # Exact matches only: each is an index lookup, never a scan of every merchant's requests.
    search_fields = ("=id", "=merchant_id")
    show_full_result_count = False
    ordering = ("-id",)
