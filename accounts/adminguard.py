"""A NUL byte anywhere in an admin URL (path or query string) is a 400 before any view runs
(issue 20 item 8): PostgreSQL cannot be sent one, and every list filter, search box and object
id of every admin (ours, Django's, django-axes') would otherwise pass it to a query and 500.
The /v1 routes answer NUL bytes themselves, in the envelope (tests/api/test_nul_bytes.py)."""

from django.http import HttpResponseBadRequest

ADMIN_NAMESPACE = "admin"  # django.contrib.admin's, whatever path it is served under


def has_nul(request) -> bool:
    return "\x00" in request.path_info or any(
        "\x00" in key or any("\x00" in value for value in values)
        for key, values in request.GET.lists()
    )


class RefuseNulInAdminMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if match and ADMIN_NAMESPACE in match.namespaces and has_nul(request):
            return HttpResponseBadRequest("A NUL byte cannot be in an id, a filter or a search.")
        return None
