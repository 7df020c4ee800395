"""Request bodies through DRF serializers, without building a serializer per request."""

import threading
from functools import cached_property

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework.fields import Field, SkipField, empty, get_error_detail

_per_thread = threading.local()


def validated(serializer_class: type[serializers.Serializer], data) -> dict:
    """What `serializer_class(data=data)` would give after `is_valid(raise_exception=True)`:
    the validated data, or the same ValidationError (the API's 400 envelope).

    Each thread keeps one instance per input class and validates on it: a new serializer
    deep-copies every declared field, nested serializers included, which cost more CPU than
    the validation itself. Validation keeps no state on the instance (errors are raised, the
    result returned), so reuse is safe within a thread; input classes here keep none either.
    """
    instances = _per_thread.__dict__.setdefault("instances", {})
    serializer = instances.get(serializer_class)
    if serializer is None:
        serializer = instances[serializer_class] = serializer_class()
    return serializer.run_validation(data)


# A request body's serializer (nested ones included): validated() keeps its instance, whose
# fields never change, so what DRF works out from them on every validation is worked out once
# (~60 calls of a create's validation). A comment, not a docstring: drf-spectacular would
# publish an inherited docstring as every input schema's description.
class Input(serializers.Serializer):
    @cached_property
    def _writable_fields(self) -> list:
        return [field for field in self.fields.values() if not field.read_only]

    @cached_property
    def _has_read_only_defaults(self) -> bool:
        return any(field.read_only and field.default is not empty for field in self.fields.values())

    def _read_only_defaults(self) -> dict:
        return super()._read_only_defaults() if self._has_read_only_defaults else {}

    @cached_property
    def _field_plan(self) -> list[tuple]:
        """Per writable field: the field, its `validate_<name>` method or None, whether a value
        the body leaves out is skipped (optional, no default), and whether its value is read
        as DRF's own `get_value` reads a JSON object's (a form's aside)."""
        return [
            (
                field,
                getattr(self, f"validate_{field.field_name}", None),
                not field.required and field.default is empty,
                type(field).get_value in _PLAIN_GET_VALUE,
            )
            for field in self._writable_fields
        ]

    def to_internal_value(self, data):
        """DRF's `Serializer.to_internal_value` for a JSON object, with what it works out anew
        for each field on every validation worked out once (`_field_plan`): its validate
        method looked up by name (a failed attribute lookup for most), the form check of
        `get_value`, and a field the body leaves out skipped without DRF's SkipField raised
        and caught (~40% of a create body's validation). Anything else, DRF's own."""
        if type(data) is not dict or getattr(self.root, "partial", False):
            return super().to_internal_value(data)
        validated, errors = {}, {}
        for field, validate_method, skipped_when_absent, plain_get in self._field_plan:
            primitive = data.get(field.field_name, empty) if plain_get else field.get_value(data)
            if primitive is empty and skipped_when_absent:
                continue
            try:
                value = field.run_validation(primitive)
                if validate_method is not None:
                    value = validate_method(value)
            except serializers.ValidationError as exc:
                errors[field.field_name] = exc.detail
            except DjangoValidationError as exc:
                errors[field.field_name] = get_error_detail(exc)
            except SkipField:
                pass
            else:
                self.set_value(validated, field.source_attrs, value)
        if errors:
            raise serializers.ValidationError(errors)
        return validated


# `get_value`s that read a JSON object (not a form) as `dict.get(field_name, empty)`.
_PLAIN_GET_VALUE = (Field.get_value, serializers.Serializer.get_value)
