"""Request bodies through DRF serializers, without building a serializer per request."""

import threading

from rest_framework import serializers

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
