"""api.validation.validated: one serializer per class and thread, same answers as a new one."""

import threading

import pytest
from rest_framework.exceptions import ValidationError

import api.validation
from api.validation import validated
from payments.serializers import PaymentCreateInput

GOOD = {
    "amount": 1000,
    "currency": "eur",
    "reference": "order-1",
    "payment_method": {"type": "card", "token": "tok_1"},
    "customer": {"billing_address": {"country": "ee"}},
}
BAD = {**GOOD, "customer": {"billing_address": {"country": "Estonia"}}, "amount": -1}


def fresh(data):
    serializer = PaymentCreateInput(data=data)
    if not serializer.is_valid():
        raise ValidationError(serializer.errors)
    return serializer.validated_data


def test_answers_as_a_new_serializer_would_before_and_after_an_error():
    assert validated(PaymentCreateInput, GOOD) == fresh(GOOD)
    with pytest.raises(ValidationError) as reused:
        validated(PaymentCreateInput, BAD)
    with pytest.raises(ValidationError) as new:
        fresh(BAD)
    assert reused.value.detail == new.value.detail
    assert validated(PaymentCreateInput, GOOD) == fresh(GOOD)  # nothing left from the error
    assert validated(PaymentCreateInput, GOOD)["customer"]["billing_address"]["country"] == "EE"


def test_each_thread_validates_on_its_own_instance():
    instances, all_recorded = [], threading.Barrier(4)

    def validate():
        validated(PaymentCreateInput, GOOD)
        instances.append(api.validation._per_thread.instances[PaymentCreateInput])
        all_recorded.wait(timeout=10)  # alive together, so no two can share a recycled id

    threads = [threading.Thread(target=validate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(instance) for instance in instances}) == 4
