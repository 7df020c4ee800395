"""The Python functions a piece of code runs: for the request path's reads that must run none
(config/fastsettings.py, api.views.ServiceAPIView.initialize_request)."""

import sys


def python_calls_while(read) -> list[str]:
    """The Python functions `read` calls (itself left out), by qualified name."""
    calls = []

    def profile(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        read()
    finally:
        sys.setprofile(None)
    return calls[1:]
