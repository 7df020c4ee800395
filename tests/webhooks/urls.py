"""Endpoint URLs at a public address (no DNS, and nothing is sent to it), each call a path
of its own, so a test's endpoints are told apart by URL (several may share one: the spec
allows it, docs/webhooks.md "Decisions")."""

import itertools

PUBLIC = "https://93.184.215.14/hooks"
_numbers = itertools.count(1)


def public_url() -> str:
    return f"{PUBLIC}/{next(_numbers)}"
