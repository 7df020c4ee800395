"""The WSGI application granian serves (config/wsgi.py), as a fresh worker process loads it."""

from tests.support.fresh import printed_by_a_fresh_process


def test_what_loading_made_is_kept_out_of_full_collections():
    counted = "import gc, config.wsgi\nprint(gc.get_freeze_count(), len(gc.get_objects()))"
    frozen, tracked = map(int, printed_by_a_fresh_process(counted).split())
    assert frozen > 50_000  # modules, classes, settings, URL patterns
    assert tracked < frozen / 20  # what a full collection still scans: made after loading
