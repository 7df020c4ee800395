"""Issue 33: a merchant can load-test its checkout in the sandbox. Fifty clients start their
test-mode creates at once through the proxy as deployed (deploy/haproxy.cfg in front of a live
pool, `serve.py web`, and the test-mode pool, `serve.py web-test`), with the production limits:
every create is answered 201. The same burst sent straight to a pool that keeps a thread for
live keys (`serve.py web`, the shape without a test-mode pool) meets the shedder's 429: why the
test-mode pool keeps none (docs/admission.md "Load-testing the sandbox")."""

import shutil
import threading
import uuid
from collections import Counter

import pytest
import requests

from accounts.services import merchant_create
from tests.e2e.fleet import HAPROXY, LoadBalancer, Node
from tests.e2e.processes import PRODUCTION_LIMITS, service_env, wait_for
from tests.factories import TokenFactory

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CLIENTS = 50
ROUNDS = 2  # 100 creates: the test-mode key's burst (API_RATE_LIMIT_TEST_BURST)


@pytest.fixture
def pools(tmp_path):
    if not shutil.which(HAPROXY):
        pytest.skip("haproxy is not installed (scripts/test.sh installs Debian's under CI)")
    env = service_env(**PRODUCTION_LIMITS)
    live = Node(env, tmp_path / "web.log")
    test = Node(env, tmp_path / "web-test.log", pool="web-test")
    balancer = LoadBalancer({"NODE1": live.address, "NODE1_TEST": test.address}, tmp_path)
    try:
        wait_for(lambda: live.answers() and test.answers(), timeout=60)
        balancer.wait_until_up("node1")
        balancer.wait_until_up("test1", backend="web_test")
        yield balancer.base_url, f"http://{live.address}"
    finally:
        balancer.stop()
        live.stop()
        test.stop()


def load_test(base_url: str) -> Counter:
    """CLIENTS threads, each with its own connection, start together and create ROUNDS
    payments one after the other, each on a token of its own; -> (status, error code) counts."""
    merchant = merchant_create(name="Load", email=f"{uuid.uuid4().hex}@example.test")
    secret = merchant.keys["test"]["secret"].secret
    tokens = [
        TokenFactory(merchant=merchant.merchant, used_at=None).id for _ in range(CLIENTS * ROUNDS)
    ]
    answered, lock, start = Counter(), threading.Lock(), threading.Barrier(CLIENTS)

    def client(mine: list[str]) -> None:
        session = requests.Session()
        start.wait()
        for token in mine:
            answer = session.post(
                f"{base_url}/v1/payments",
                json={
                    "amount": 1000,
                    "currency": "eur",
                    "reference": "load test",
                    "payment_method": {"type": "card", "token": token},
                },  # fmt: skip
                headers={"Authorization": f"Bearer {secret}", "Idempotency-Key": str(uuid.uuid4())},
                timeout=60,
            )
            code = answer.json().get("error", {}).get("code") if answer.status_code >= 400 else None
            with lock:
                answered[(answer.status_code, code)] += 1

    threads = [threading.Thread(target=client, args=(tokens[i::CLIENTS],)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answered


def test_fifty_clients_at_once_are_all_served_by_the_test_mode_pool(pools):
    through_the_proxy, _ = pools
    assert load_test(through_the_proxy) == {(201, None): CLIENTS * ROUNDS}


def test_a_pool_keeping_a_thread_for_live_keys_sheds_the_same_burst(pools):
    _, live_pool = pools
    answered = load_test(live_pool)
    assert answered[(429, "rate_limit_exceeded")] > 0
    assert set(answered) == {(201, None), (429, "rate_limit_exceeded")}
