"""Two nodes behind haproxy on one PostgreSQL and one Redis (docs/production.md): both nodes run
the release step at once, one Idempotency-Key raced across both nodes makes one payment,
haproxy's HTTP check of each node's readiness keeps both in though the fleet has no beat and
takes out the node that cannot reach PostgreSQL, a node SIGTERMed mid-request drains it and
stops while the other serves every request, and a node killed -9 mid-request costs its client
one JSON 502 and a retry, never a second payment."""

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
import requests

from tests.e2e.fleet import HAPROXY, LoadBalancer, Node, Process, release
from tests.e2e.processes import ROOT, service_env, wait_for
from tests.e2e.stack import scratch_database
from tests.sick import FORWARD, Proxy

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

LEASE_SECONDS = 8  # IDEMPOTENCY_LEASE_SECONDS on the nodes: a dead request holds its key this long
# (short, to keep the test short; long enough that a slow request under load keeps its claim)
SLOW_MS = 3000  # a sandbox issuer wait: long enough to act on a node mid-request


@pytest.fixture
def fleet(tmp_path):
    if not shutil.which(HAPROXY):
        pytest.skip("haproxy is not installed (scripts/test.sh installs Debian's under CI)")
    with scratch_database(os.environ["DATABASE_URL"], suffix="fleet") as url:
        env = service_env(
            DATABASE_URL=url,
            DATABASE_POOL="true",
            WEB_WORKERS="1",
            WEB_KILL_TIMEOUT="10",
            IDEMPOTENCY_LEASE_SECONDS=str(LEASE_SECONDS),
            API_RATE_LIMIT_TEST_RATE="1000",
            API_RATE_LIMIT_TEST_BURST="1000",
            SANDBOX_LATENCY_CONCURRENCY="8",
        )
        # The release step on both nodes at once (the migrate command's advisory lock).
        steps = [release(f"node{i}", env, tmp_path / f"migrate-{i}.log") for i in (1, 2)]
        assert [step.wait(120) for step in steps] == [0, 0], [
            (tmp_path / f"migrate-{i}.log").read_text() for i in (1, 2)
        ]
        # node2 reaches PostgreSQL through a proxy the test can cut (node1 and the worker not).
        link = Proxy(url)
        nodes = [Node(env, tmp_path / "node1.log")]
        nodes.append(Node({**env, "DATABASE_URL": link.url}, tmp_path / "node2.log"))
        worker = Process("worker", env, tmp_path / "worker.log")
        balancer = LoadBalancer({f"NODE{i}": n.address for i, n in enumerate(nodes, 1)}, tmp_path)
        try:
            balancer.wait_until_up("node1", "node2")
            yield Fleet(url, env, nodes, balancer, link)
        finally:
            balancer.stop()
            for process in [*nodes, worker]:
                process.stop()
            link.close()


class Fleet:
    def __init__(
        self, database_url: str, env: dict, nodes: list[Node], balancer: LoadBalancer, link: Proxy
    ):
        self.database_url, self.nodes, self.balancer = database_url, nodes, balancer
        self.link = link  # node2's way to PostgreSQL
        created = subprocess.run(
            [sys.executable, "manage.py", "create_merchant", "--name", "Fleet"]
            + ["--email", "fleet@example.test", "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        keys = json.loads(created.stdout)["keys"]["test"]
        self.api = balancer.base_url + "/v1"
        self.secret, self.publishable = keys["secret"], keys["publishable"]

    def token(self) -> str:
        card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2040, "cvc": "123"}
        answer = requests.post(
            f"{self.api}/sandbox/tokens",
            json=card,
            headers={"Authorization": f"Bearer {self.publishable}"},
            timeout=10,
        )
        assert answer.status_code == 201, answer.text
        return answer.json()["id"]

    def payment_request(self, reference: str, wait_ms: int = 0) -> tuple[dict, dict]:
        """(headers, body) of a card payment, with an Idempotency-Key of its own."""
        body = {"amount": 1000, "currency": "eur", "reference": reference}
        body["payment_method"] = {"type": "card", "token": self.token()}
        if wait_ms:
            body["metadata"] = {"_svc_test_latency_ms": wait_ms}
        headers = {"Authorization": f"Bearer {self.secret}", "Idempotency-Key": str(uuid.uuid4())}
        return headers, body

    def post(self, request: tuple[dict, dict]) -> requests.Response:
        headers, body = request
        return requests.post(f"{self.api}/payments", headers=headers, json=body, timeout=60)

    def listing(self) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.secret}"}
        return requests.get(f"{self.api}/payments", headers=headers, timeout=30)

    def payments(self, reference: str) -> int:
        with psycopg.connect(self.database_url) as conn:
            query = "SELECT count(*) FROM payments_payment WHERE reference = %s"
            return conn.execute(query, [reference]).fetchone()[0]

    def connections(self) -> int:
        """Connections the fleet holds to its database (this query's own left out)."""
        with psycopg.connect(self.database_url) as conn:
            query = "SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = current_database()"
            return conn.execute(query).fetchone()[0]

    def both_in_flight(self, pool: ThreadPoolExecutor, requests_: list) -> list:
        """Starts two slow requests at once; round robin gives one to each node."""
        answers = [pool.submit(self.post, request) for request in requests_]
        wait_for(lambda: self.balancer.in_flight() == {"node1": 1, "node2": 1}, timeout=30)
        return answers


def test_two_nodes_behind_haproxy(fleet: Fleet):
    one_payment_for_a_key_raced_over_both_nodes(fleet)
    the_balancer_checks_each_nodes_own_readiness(fleet)
    a_node_that_cannot_reach_postgresql_leaves_the_pool(fleet)
    first, second = fleet.nodes
    with ThreadPoolExecutor(4) as pool:
        a_node_sigtermed_mid_request_drains_while_every_request_is_served(fleet, pool, first)
        # A rolling restart: the node comes back on its port and haproxy sends it work again.
        first.restart()
        fleet.balancer.wait_until_up("node1")
        a_node_killed_mid_request_costs_one_502_and_never_two_payments(fleet, pool, second)


def one_payment_for_a_key_raced_over_both_nodes(fleet: Fleet) -> None:
    raced = fleet.payment_request("raced")
    served_before = fleet.balancer.served()
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda _: fleet.post(raced), range(16)))
    assert {answer.status_code for answer in answers} <= {201, 409}, [a.text for a in answers]
    created = {answer.json()["id"] for answer in answers if answer.status_code == 201}
    assert len(created) == 1
    served = fleet.balancer.served()
    assert all(served[node] > served_before[node] for node in ("node1", "node2")), served
    replay = fleet.post(raced)
    assert replay.headers["Idempotent-Replayed"] == "true" and replay.json()["id"] in created
    assert fleet.payments("raced") == 1
    # docs/production.md "PostgreSQL connection budget", for two nodes of one web worker (4
    # threads) and one worker (concurrency 2): 2 x 1 x (4 + 2) + (2 + 1) x 3.
    assert fleet.connections() <= 2 * 1 * (4 + 2) + (2 + 1) * 3


def the_balancer_checks_each_nodes_own_readiness(fleet: Fleet) -> None:
    """haproxy's check is HTTP (L7OK: /readyz?scope=node answered 200), and this fleet runs no
    beat: the full /readyz of every node says so (503), and neither node leaves the pool."""
    assert {check_status(fleet, node) for node in ("node1", "node2")} == {"L7OK"}
    for node in fleet.nodes:
        full = requests.get(f"http://{node.address}/readyz?format=json", timeout=10)
        assert full.status_code == 503 and "beat" in full.text, full.text
    assert fleet.balancer.servers_up() >= {"node1", "node2"}


def check_status(fleet: Fleet, node: str) -> str:
    """haproxy's last check of `node` (a leading "* " while the next one runs)."""
    return fleet.balancer.stats()[node]["check_status"].removeprefix("* ")


def a_node_that_cannot_reach_postgresql_leaves_the_pool(fleet: Fleet) -> None:
    """node2's link to PostgreSQL cut: its check fails (Database, Migrations), haproxy takes it
    out, every request goes to node1; the link back, node2 is back in."""
    fleet.link.go_down()
    # Its requests fail until then (~2 checks); "UP 1/2" is one failed check, not yet out.
    wait_for(lambda: fleet.balancer.stats()["node2"]["status"] == "DOWN", timeout=30)
    assert check_status(fleet, "node2") == "L7STS"  # answered, not ready
    served = fleet.balancer.served()["node2"]
    assert [fleet.listing().status_code for _ in range(10)] == [200] * 10
    assert fleet.balancer.served()["node2"] == served
    fleet.link.set_mode(FORWARD)
    fleet.balancer.wait_until_up("node2")


def a_node_sigtermed_mid_request_drains_while_every_request_is_served(
    fleet: Fleet, pool: ThreadPoolExecutor, node: Node
) -> None:
    """SIGTERM with a slow request on each node: the node answers its own and exits 0, and
    every request sent through haproxy until it is gone is answered 200 (refused connections
    go to the other node; the check takes it out)."""
    draining = [fleet.payment_request(f"drain-{i}", SLOW_MS) for i in (1, 2)]
    answers = fleet.both_in_flight(pool, draining)
    node.process.send_signal(signal.SIGTERM)
    statuses = []
    while node.process.poll() is None:
        statuses.append(fleet.listing().status_code)
    assert statuses and set(statuses) == {200}, statuses
    assert [answer.result().status_code for answer in answers] == [201, 201]
    assert node.process.wait(timeout=30) == 0


def a_node_killed_mid_request_costs_one_502_and_never_two_payments(
    fleet: Fleet, pool: ThreadPoolExecutor, node: Node
) -> None:
    """kill -9 mid-request: that client gets the proxy's 502 in the error envelope; its retry
    with the same key is 409 while the key's lease lasts, then answered once."""
    killed = [fleet.payment_request(f"killed-{i}", SLOW_MS) for i in (1, 2)]
    answers = fleet.both_in_flight(pool, killed)
    node.signal(signal.SIGKILL)
    # A request that reached the node as it died is lost like the one in flight; once it is
    # gone, haproxy sends every request to the other node.
    node.wait_gone()
    for _ in range(10):
        assert fleet.listing().status_code == 200
    statuses = [answer.result().status_code for answer in answers]
    assert sorted(statuses) == [201, 502], statuses
    lost = statuses.index(502)
    failure = answers[lost].result()
    assert failure.headers["Content-Type"] == "application/json; charset=utf-8"
    assert failure.json()["error"]["type"] == "api_error"

    retried = []

    def answered() -> bool:
        retried.append(fleet.post(killed[lost]))
        return retried[-1].status_code != 409

    wait_for(answered, timeout=LEASE_SECONDS + 20)
    assert retried[-1].status_code < 500, retried[-1].text
    assert fleet.payments(f"killed-{lost + 1}") == 1
    assert fleet.payments(f"killed-{2 - lost}") == 1
