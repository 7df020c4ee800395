"""The DRF request every API view gets (api.views.ServiceAPIView.initialize_request): what the
request machinery reads most is on it, not found through DRF's attribute proxy."""

from django.test import RequestFactory

from api.views import ServiceAPIView
from tests.support.calls import python_calls_while


def drf_request_of(django_request):
    view = ServiceAPIView()
    view.setup(django_request)
    return view.initialize_request(django_request)


def test_method_and_meta_are_read_without_the_proxy():
    django_request = RequestFactory().post("/v1/payments", {}, content_type="application/json")
    request = drf_request_of(django_request)

    assert python_calls_while(lambda: (request.method, request.META)) == []
    assert request.method == "POST" and request.META is django_request.META


def test_other_attributes_still_come_from_djangos_request():
    django_request = RequestFactory().get("/v1/payments")
    django_request.request_id = "req_1"
    request = drf_request_of(django_request)

    assert request.request_id == "req_1" and request.path == "/v1/payments"
