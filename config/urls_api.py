"""The API without the back office (SERVE=api): the public web process of a deployment whose
admin runs as a process of its own (docs/back-office.md "Its own process")."""

from django.urls import path
from django.views.generic import TemplateView

from config.urls import ADMIN, HOME, handler404, handler500  # noqa: F401  (the root URLconf's)
from config.urls import urlpatterns as _every

# `/` says where the admin is instead of linking a /admin/ that is not here.
HOME_WITHOUT_ADMIN = path(
    "",
    TemplateView.as_view(template_name="home/index.html", extra_context={"admin_elsewhere": True}),
    name="home",
)

urlpatterns = [
    HOME_WITHOUT_ADMIN if pattern is HOME else pattern for pattern in _every if pattern is not ADMIN
]
