"""deploy/haproxy.cfg keeps its tables across a reload (`systemctl reload haproxy`, SIGUSR2 to
the master): a key it has seen answered with a success still goes to the live pool, and a source
and a key it was refusing are still refused. Before the `peers` section a reload forgot them
all: every known live key's next request went to the second pool, and a flood started afresh
(docs/production.md "The proxy"). The pools are stand-ins that answer with their name."""

from tests.e2e.processes import wait_for
from tests.e2e.standins import Pool, answer_by_key, get

KNOWN = "svc_sk_live_" + "k" * 24
OVER_ITS_RATE = "svc_sk_live_" + "r" * 24
MADE_UP = "svc_sk_live_" + "m" * 24
ATTACKER, OTHER = "127.0.0.9", "127.0.0.10"
PAST_THE_THRESHOLD = 43  # refusals in 10 s past which the proxy refuses (40), and a margin


ANSWERS = {KNOWN: (200, {}), OVER_ITS_RATE: (429, {"Retry-After": "1", "X-RateLimit-Scope": "key"})}
REFUSED = (401, {})  # any other key


def refused_by_the_proxy(pools: list[Pool], port: int, key: str, source: str) -> bool:
    served = sum(pool.served for pool in pools)
    status = get(port, key, source=source)[0]
    return status == 429 and sum(pool.served for pool in pools) == served


def test_a_reload_keeps_the_known_keys_and_the_refusals(proxy_for):
    live = Pool("live", answer_by_key("live", ANSWERS, REFUSED))
    test = Pool("test", answer_by_key("test", ANSWERS, REFUSED))
    try:
        proxy = proxy_for(live, test)
        port = proxy.port
        wait_for(proxy.tables_settled, timeout=30)
        assert [get(port, KNOWN)[2] for _ in range(2)] == ["test", "live"]
        for _ in range(PAST_THE_THRESHOLD):
            get(port, MADE_UP, source=ATTACKER)
            get(port, OVER_ITS_RATE, source=OTHER)
        assert refused_by_the_proxy([live, test], port, KNOWN, ATTACKER)
        assert refused_by_the_proxy([live, test], port, OVER_ITS_RATE, OTHER)

        proxy.reload()

        assert get(port, KNOWN)[2] == "live"  # its first request after the reload
        assert refused_by_the_proxy([live, test], port, KNOWN, ATTACKER)
        assert refused_by_the_proxy([live, test], port, OVER_ITS_RATE, OTHER)
        assert get(port, KNOWN, source=OTHER)[2] == "live"  # only the key was refused there
    finally:
        live.stop()
        test.stop()
