from django.contrib import admin
from django.urls import include, path, re_path

from api.views import unrecognized_path

handler404 = "api.views.handler404"
handler500 = "api.views.handler500"

# Every other path under /v1/ is routed to the 404 envelope, so that DEBUG's HTML 404 page never
# answers there: paths reserved for later versions (spec "Common rules" 6: customers,
# payment-methods, payouts, disputes, payment-links, the refunds list) and unknown ones alike.
API_FALLBACK = r"^v1(/.*)?$"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("payments.urls")),
    path("", include("refunds.urls")),
    path("", include("sandbox.urls")),
    path("", include("webhooks.urls")),
    # Keep last: rooms add their routes above.
    re_path(API_FALLBACK, unrecognized_path),
]
