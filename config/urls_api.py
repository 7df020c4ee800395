"""The API without the back office (SERVE=api): the public web process of a deployment whose
admin runs as a process of its own (docs/back-office.md "Its own process")."""

from config.urls import ADMIN, handler404, handler500  # noqa: F401  (the root URLconf's)
from config.urls import urlpatterns as _every

urlpatterns = [pattern for pattern in _every if pattern is not ADMIN]
