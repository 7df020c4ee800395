"""The DRF request every API view gets (api.views.ServiceAPIView.initialize_request): what the
request machinery reads most is on it, not found through DRF's attribute proxy."""

from django.test import RequestFactory

from api.views import ServiceAPIView
from tests.support.calls import python_calls_while


def view_of(django_request) -> ServiceAPIView:
    view = ServiceAPIView()
    view.setup(django_request)
    return view


def drf_request_of(django_request):
    return view_of(django_request).initialize_request(django_request)


def test_what_the_machinery_reads_most_is_read_without_the_proxy():
    django_request = RequestFactory().post("/v1/payments", {}, content_type="application/json")
    django_request.request_id = "req_1"  # RequestIdMiddleware's
    request = drf_request_of(django_request)

    reads = lambda: (request.method, request.META, request.path, request.request_id)  # noqa: E731
    assert python_calls_while(reads) == []
    assert reads() == ("POST", django_request.META, "/v1/payments", "req_1")
    assert request.META is django_request.META


def test_a_request_without_a_request_id_still_gets_one_set_later():
    django_request = RequestFactory().get("/v1/payments", {"limit": "3"})
    request = drf_request_of(django_request)  # no RequestIdMiddleware ran: none copied
    django_request.request_id = "req_2"

    assert request.request_id == "req_2" and request.query_params["limit"] == "3"


def test_a_view_class_shares_its_stateless_parts_and_makes_its_throttles_anew():
    views = [view_of(RequestFactory().get("/v1/payments")) for _ in range(2)]

    assert views[0].get_authenticators()[0] is views[1].get_authenticators()[0]
    assert views[0].get_parsers()[0] is views[1].get_parsers()[0]
    assert views[0].get_throttles()[0] is not views[1].get_throttles()[0]


def test_allow_names_the_methods_drf_names_on_every_request(db):
    from payments.views import PaymentListCreate

    view = PaymentListCreate.as_view()
    answers = [view(RequestFactory().get("/v1/payments")) for _ in range(2)]

    assert [answer.status_code for answer in answers] == [401, 401]  # no key
    assert [answer["Allow"] for answer in answers] == ["GET, POST, HEAD, OPTIONS"] * 2
