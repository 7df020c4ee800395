"""Sick dependencies for tests: the fault-injection suite's proxy (tests/fault_proxy.py) in front
of the real Redis or PostgreSQL, addressed by URL. It forwards (FORWARD), accepts connections and
never answers (HANG), or refuses every connection (DOWN, as a restarting server), and counts the
connections it accepts, so a test proves that a call touched no socket without timing it. A dead
Redis needs no proxy: a closed port (CLOSED_PORT_URL)."""

from urllib.parse import urlsplit

from tests.fault_proxy import FaultProxy

CLOSED_PORT_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
FORWARD, HANG, DOWN = "pass", "hang", "refuse"
DEFAULT_PORTS = {"redis": 6379, "postgres": 5432, "postgresql": 5432}


class Proxy(FaultProxy):
    """A FaultProxy for the service at `url`; `.url` is that URL through the proxy."""

    def __init__(self, url: str, mode: str = FORWARD):
        target = urlsplit(url)
        super().__init__((target.hostname, target.port or DEFAULT_PORTS[target.scheme]))
        self.set_mode(mode)
        self.url = target._replace(netloc=f"{_userinfo(target)}127.0.0.1:{self.port}").geturl()

    def go_down(self) -> None:
        """Every connection through the proxy is cut, and new ones are refused."""
        self.set_mode(DOWN)
        self.cut()


def _userinfo(url) -> str:
    return url.netloc.rpartition("@")[0] + "@" if "@" in url.netloc else ""
