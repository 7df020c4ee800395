"""Request bodies through DRF serializers, without building a serializer per request."""

import threading
from functools import cached_property

from rest_framework import serializers
from rest_framework.fields import empty

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
