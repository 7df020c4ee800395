from django.contrib import admin
from django.urls import include, path, re_path

from api.views import unrecognized_path

handler404 = "api.views.handler404"
handler500 = "api.views.handler500"

# Reserved for later versions (spec "Common rules" 6): they answer 404 in the envelope.
RESERVED = r"^v1/((customers|payment-methods|payouts|disputes|payment-links)(/.*)?|refunds/?)$"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("payments.urls")),
    path("", include("refunds.urls")),
    path("", include("sandbox.urls")),
    path("", include("webhooks.urls")),
    # Keep last: rooms add their routes above.
    re_path(RESERVED, unrecognized_path),
]
