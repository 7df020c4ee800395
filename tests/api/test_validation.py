"""api.validation.validated: one serializer per class and thread, same answers as a new one."""

import importlib
import threading

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
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


# Every request body's input class: what each app's views and serializers declare.
INPUTS = sorted(
    (
        cls
        for module in (
            "payments.serializers",
            "refunds.serializers",
            "webhooks.serializers",
            "sandbox.views",
            "sandbox.simulate_webhook",
            "processors.views",
        )  # fmt: skip
        for cls in vars(importlib.import_module(module)).values()
        if isinstance(cls, type) and issubclass(cls, Input) and cls is not Input
    ),
    key=lambda cls: f"{cls.__module__}.{cls.__qualname__}",
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.text(max_size=6)
    | st.sampled_from(["eur", "card", "tok_1", "EE", "https://shop.test/r", "payment.captured"])
)
ANY_JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def bodies(input_class: type[Input], depth: int = 2):
    """JSON objects keyed by the input's own field names (and one it does not declare), each
    value any JSON or, for a nested input, a body of its own."""
    fields = input_class().fields
    values = {
        name: (
            st.one_of(bodies(type(field), depth - 1), ANY_JSON)
            if isinstance(field, Input) and depth
            else ANY_JSON
        )
        for name, field in fields.items()
    }
    values["undeclared"] = ANY_JSON
    return st.fixed_dictionaries({}, optional=values)


def outcome(validate, body):
    try:
        return "valid", validate(body)
    except ValidationError as error:
        return "invalid", error.detail


@pytest.mark.django_db
@pytest.mark.parametrize("input_class", INPUTS, ids=lambda cls: cls.__qualname__)
def test_an_input_answers_every_body_as_drfs_own_serializer(input_class, monkeypatch):
    """Input.to_internal_value (its plan worked out once per field) against DRF's
    Serializer.to_internal_value, on bodies made of the input's own fields: the same
    validated data, or the same errors."""

    @given(bodies(input_class))
    @hypothesis_settings(max_examples=80, deadline=None, database=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
    def agree(body):
        ours = outcome(lambda data: validated(input_class, data), body)
        with monkeypatch.context() as patched:
            patched.setattr(Input, "to_internal_value", serializers.Serializer.to_internal_value)
            drfs = outcome(lambda data: input_class().run_validation(data), body)
        assert ours == drfs

    agree()
