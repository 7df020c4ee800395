"""The request log in the back office: read-only, found by request id or merchant."""

from django.contrib import admin

from api.models import RequestLogEntry


@admin.register(RequestLogEntry)
class RequestLogAdmin(admin.ModelAdmin):
    list_display = ("id", "merchant_id", "livemode", "method", "path", "status", "error_code",
                    "duration_ms", "created")  # fmt: skip
    # Exact matches only: each is an index lookup, never a scan of every merchant's requests.
    search_fields = ("=id", "=merchant_id")
    show_full_result_count = False
    ordering = ("-id",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
