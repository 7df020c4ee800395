"""Labelled metric children, kept: `metric.labels(...)` checks, converts and locks on every
call (a create counts five), while a child, once made, is the same object for the process's
life (prometheus_client keeps it until remove(), which nothing here calls)."""

from functools import lru_cache


@lru_cache(maxsize=4096)
def labelled(metric, *values):
    """`metric.labels(*values)`; the same child, from a cache lookup after the first call. The
    bound only keeps a label of unbounded values from growing it: an evicted child is made
    again as the same object."""
    return metric.labels(*values)
