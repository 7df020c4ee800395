"""The back office alone (SERVE=admin): a process a deployment binds to an internal address,
so the admin's login cannot take web threads from the API (docs/back-office.md)."""

from config.urls import ADMIN, handler404, handler500  # noqa: F401  (the root URLconf's)

urlpatterns = [ADMIN]
