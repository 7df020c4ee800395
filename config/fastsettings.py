"""`settings.X` read as a plain attribute (docs/payments.md "Counted in instructions").

Django's `LazySettings` caches each setting in its own `__dict__` on the first read, but every
read still runs `LazyObject.__getattribute__`, a Python method that looks the attribute up and
then asks it for `_mask_wrapped` (so that a proxy method such as `__len__`, read by name, goes
to the wrapped object instead). Settings are never proxy methods. A payment create reads ~76
settings: 3.3% of its instructions went to that method.

With `object.__getattribute__` a cached setting is an instance-dict read in C; a setting not
cached yet still falls through to `LazySettings.__getattr__`, which reads and caches it. What
`override_settings` and a test's `settings.X = ...` rely on is untouched: `__setattr__` and
`__delattr__` still clear the cache.

Pinned with Django (pyproject.toml): `tests/test_fastsettings.py` checks both.
"""

from django.conf import LazySettings


def read_settings_without_the_proxy_check() -> None:
    LazySettings.__getattribute__ = object.__getattribute__
