from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import TemplateView

from api.request_logs import RequestLogList
from api.views import unrecognized_path
from config import openapi

handler404 = "api.views.handler404"
handler500 = "api.views.handler500"

# Every other path under /v1/ is routed to the 404 envelope, so that DEBUG's HTML 404 page never
# answers there: paths reserved for later versions (spec "Common rules" 6: customers,
# payment-methods, payouts, disputes, payment-links, the refunds list) and unknown ones alike.
API_FALLBACK = r"^v1(/.*)?$"

# The back office; a process may serve it alone, or the API without it (SERVE: config/urls_api.py,
# config/urls_admin.py, docs/back-office.md "Its own process").
ADMIN = path("admin/", admin.site.urls)

# What a person opening the service in a browser finds: where the docs and the admin are.
HOME = path("", TemplateView.as_view(template_name="home/index.html"), name="home")

urlpatterns = [
    ADMIN,
    HOME,
    # The published contract (docs/openapi.md): no API key, built once per process.
    path("openapi.json", openapi.openapi_json, name="openapi-json"),
    path("openapi.yaml", openapi.openapi_yaml, name="openapi-yaml"),
    path("docs/", openapi.redoc, name="docs"),
    path("", include("payments.urls")),
    path("", include("refunds.urls")),
    path("", include("sandbox.urls")),
    path("", include("webhooks.urls")),
    path("", include("processors.urls")),
    path("v1/request-logs", RequestLogList.as_view()),
    # Keep last: rooms add their routes above.
    re_path(API_FALLBACK, unrecognized_path),
]
