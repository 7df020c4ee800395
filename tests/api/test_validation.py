"""api.validation.validated: one serializer per class and thread, same answers as a new one."""

import threading

import pytest
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

import api.validation
from api.validation import Input, validated
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


class WithReadOnlyDefault(Input):
    name = serializers.CharField()
    kind = serializers.CharField(read_only=True, default="card")

    class Meta:
        validators = [lambda value: SEEN.append(dict(value))]


SEEN: list = []


def test_an_input_still_gives_its_validators_the_read_only_defaults_and_reads_no_read_only():
    SEEN.clear()
    assert validated(WithReadOnlyDefault, {"name": "n", "kind": "sent"}) == {"name": "n"}
    assert SEEN == [{"kind": "card", "name": "n"}]  # as DRF's own Serializer gives them
    assert not Input()._has_read_only_defaults and Input()._read_only_defaults() == {}
