"""Benchmark: one merchant's live traffic while another merchant (or anyone) attacks the API.

Starts the Procfile's web process (granian, 2 workers x 4 threads) on PostgreSQL + Redis with
the production limits, and two merchants. "bob" sends live-mode requests at a steady pace
(`GET /v1/payments`, 2 clients, one request every 20 ms each) and his customers create a token
with his publishable key every 250 ms from their own address. Bob's latency is measured
alone, then during each attack, one at a time, then all together, alone again after each:

- bodies: alice's test key posts worst-case 256 KiB bodies (bench_card_guard's) in a loop;
- live bodies: the same with alice's live key;
- publishable: one address floods bob's (public) publishable key with token creations;
- unknown keys: one address floods made-up secret keys;
- many sources: the same from 1,016 addresses in turn, a new connection each time (each
  address under every per-address limit).

Each attack is `--connections` closed-loop keep-alive connections from a second process, from
the source address 127.0.0.7 (a proxy tells it from bob's 127.0.0.1); bob is measured from a
third. `--shape` says what stands in front of the service:
- `direct`: nothing, the bench talks to granian;
- `proxy`: haproxy with the app's deploy/haproxy.cfg as it is written, one pool behind it;
- `routed` (the default): the same, plus a second `serve.py web` (1 worker) for test mode,
  named to haproxy as NODE1_TEST: test keys, unknown keys and large bodies go to it
  (docs/request-safety.md "Test mode on its own processes"), at the lowest CPU weight as
  deployed (`--test-pool-weight`; niceness 10 where no cgroup can be made). An app whose
  haproxy.cfg has no such rule serves as `proxy`.
The bench sends `X-Forwarded-For` (the attacker's address, bob's customers' own), which the
proxy passes on, and the service trusts 127.0.0.1 as its proxy (API_TRUSTED_PROXIES).
Reported: bob's p50 and p99 and their ratios to the mean of the "alone" phases just before and
after (the goal: p99 <= 2x), bob's customers' token creations that succeeded, and what the
attackers were answered.

    make bench                               # every bench/bench_*.py
    .venv/bin/python bench/bench_neighbours.py --seconds 10
    .venv/bin/python bench/bench_neighbours.py --app /path/to/other/checkout   # before/after
    .venv/bin/python bench/bench_neighbours.py --shape proxy    # the same without the test pool
    .venv/bin/python bench/bench_neighbours.py --only "unknown keys"   # repeatable

BENCH_DATABASE_URL (a database it may drop and recreate) and BENCH_REDIS_URL as
bench_payments.py.
"""

import argparse
import itertools
import json
import os
import secrets
import shutil
import signal
import string
import subprocess
import sys
import threading
import time
from collections import Counter
from http.client import HTTPConnection
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_card_guard import BODIES  # noqa: E402
from bench_payments import (  # noqa: E402
    PYTHON,
    ROOT,
    KeepAliveClient,
    add_service_arguments,
    manage,
    production_env,
    recreate_database,
    summary,
)

ATTACKER, CUSTOMER = "203.0.113.7", "198.51.100.20"
ATTACKER_SOURCE = "127.0.0.7"  # the attackers' connections' own address (any 127.x is ours)
TOKENS = "/v1/sandbox/tokens"
WORST = [body for name, body in BODIES.items() if name.startswith("worst:")]
TOKEN_BODY = json.dumps(
    {"number": "4242424242424242", "exp_month": 12, "exp_year": 2099, "cvc": "123"}
).encode()

SETUP = """
import json, django
django.setup()
from accounts.services import merchant_create
keys = {}
for name in ("alice", "bob"):
    made = merchant_create(name=name, email=f"{name}@example.test")
    keys[name] = {mode: {kind: issued.secret for kind, issued in kinds.items()}
                  for mode, kinds in made.keys.items()}
print(json.dumps(keys))
"""


def service_env(args) -> dict:
    return {
        **production_env(args),
        "API_TRUSTED_PROXIES": "127.0.0.1/32",  # the bench (or haproxy before it) is the proxy
        "WEB_PORT": str(args.port if args.shape == "direct" else args.port + 1),
        "VENV": str(ROOT / ".venv"),
    }


def start_service(args, env: dict) -> list[subprocess.Popen]:
    """The web pool, and by `--shape` the test-mode pool and haproxy in front: `args.port`
    is where the bench sends every request."""
    started = [start_web(env, int(env["WEB_PORT"]))]
    if args.shape == "direct":
        return started
    proxy_env = {"LB_BIND": f"127.0.0.1:{args.port}", "LB_PEER": f"127.0.0.1:{args.port + 3}"}
    proxy_env["NODE1"] = f"127.0.0.1:{args.port + 1}"
    proxy_env["NODE2"] = proxy_env["NODE1"]  # one pool: the Procfile's two workers
    if args.shape == "routed":
        test_env = {**env, "WEB_PORT": str(args.port + 2), "WEB_WORKERS": "1"}
        group = cpu_group("svc_bench_test_pool", args.test_pool_weight)
        started.append(start_web(test_env, args.port + 2, args.test_pool_nice, group))
        proxy_env["NODE1_TEST"] = f"127.0.0.1:{args.port + 2}"
    config = Path(env["PYTHONPATH"]) / "deploy" / "haproxy.cfg"
    started.append(
        subprocess.Popen(
            [shutil.which("haproxy"), "-db", "-f", str(config)],
            env={**os.environ, **proxy_env},
            start_new_session=True,
        )
    )
    wait_until_serving(args.port)
    time.sleep(3)  # haproxy's health checks (rise 2, 1 s apart) find the pools up
    return started


def wait_until_serving(port: int) -> bool:
    for _ in range(300):
        try:
            conn = HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/v1/payments")
            conn.getresponse().read()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def start_web(
    env: dict, port: int, niceness: int = 0, group: Path | None = None
) -> subprocess.Popen:
    """The Procfile's `web` line as it is written, in its own process group, at `niceness`
    or in the cgroup `group` (a lower CPU share, as a deployment gives the test pool:
    docs/production.md)."""
    procfile = (Path(env["PYTHONPATH"]) / "Procfile").read_text().splitlines()
    command = next(line for line in procfile if line.startswith("web:")).split(":", 1)[1]
    web = subprocess.Popen(
        ["nice", "-n", str(niceness), "bash", "-c", "exec " + command.strip()],
        cwd=env["PYTHONPATH"],
        env=env,
        start_new_session=True,
        # Joined before exec, so granian's workers are born in it.
        preexec_fn=(lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
        if group
        else None,
    )
    if wait_until_serving(port):
        return web
    stop_web(web)
    raise SystemExit("the web process did not start")


CGROUP_V1, CGROUP_V2 = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")


def cgroup_cpu_setting() -> tuple[Path, str] | None:
    """(the cgroup tree, the CPU weight's file) when this process may make a cgroup with a
    CPU weight (root, or a delegated tree), else None."""
    if (CGROUP_V1 / "cpu.shares").exists() and os.access(CGROUP_V1, os.W_OK):
        return CGROUP_V1, "cpu.shares"
    controllers = CGROUP_V2 / "cgroup.subtree_control"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return (CGROUP_V2, "cpu.weight") if os.access(CGROUP_V2, os.W_OK) else None
    return None


def cpu_group(name: str, weight: int) -> Path | None:
    """A cgroup of its own at this CPU weight (cgroup v2's `cpu.weight` scale, 1-10000, where
    every other process weighs 100, as systemd's `CPUWeight=`; cgroup v1's `cpu.shares` are
    scaled to it), or None for weight 0. Unlike niceness, the weight is the whole pool's,
    however many threads it runs."""
    if not weight:
        return None
    found = cgroup_cpu_setting()
    if found is None:
        raise SystemExit("--test-pool-weight: no cgroup CPU controller this user may write to")
    tree, setting = found
    value = max(2, weight * 1024 // 100) if setting == "cpu.shares" else weight
    group = tree / name
    group.mkdir(exist_ok=True)
    (group / setting).write_text(str(value))
    return group


# --- load (each in a process of its own) ------------------------------------------------------


def loop(port: int, stop, pause: float, send, source="127.0.0.1") -> tuple[list[float], Counter]:
    """send(client) -> status, until `stop` is set, `pause` seconds apart; reconnects when the
    server closes the connection. -> (latencies, statuses)."""
    latencies, statuses, client = [], Counter(), None
    while not stop.is_set():
        started = time.perf_counter()
        try:
            client = client or KeepAliveClient(port, source)
            status = send(client)
        except OSError:
            client, status = None, "closed"
        latencies.append(time.perf_counter() - started)
        statuses[status] += 1
        if pause:
            stop.wait(pause)
    return latencies, statuses


def in_threads(count: int, work) -> list:
    results = [None] * count

    def run(index):
        results[index] = work(index)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def bob(port: int, keys: dict, ready, stop, out) -> None:
    """Bob's live requests (2 clients) and his customers' token creations (1 client)."""
    live = {"Authorization": f"Bearer {keys['live']['secret']}"}
    customer = {
        "Authorization": f"Bearer {keys['test']['publishable']}",
        "Content-Type": "application/json",
        "X-Forwarded-For": CUSTOMER,
    }

    def token(client):
        status, body = client.post(TOKENS, customer, TOKEN_BODY)
        return "shed" if status == 429 and b"busy" in body else status  # test mode: by design

    def work(index):
        if index == 2:
            return loop(port, stop, 0.25, token)
        return loop(port, stop, 0.02, lambda c: c.request("GET", "/v1/payments", live)[0])

    ready.set()
    results = in_threads(3, work)
    latencies = results[0][0] + results[1][0]
    out.put((latencies, dict(results[0][1] + results[1][1]), dict(results[2][1])))


def attack(port: int, kinds: list[str], keys: dict, connections: int, ready, stop, out) -> None:
    senders = {
        "bodies": bodies_sender(keys["alice"]["test"]["secret"]),
        "live bodies": bodies_sender(keys["alice"]["live"]["secret"]),
        "publishable": publishable_sender(keys["bob"]["test"]["publishable"]),
        "unknown keys": unknown_key_sender(),
        "many sources": many_sources_sender(port, unknown_key_sender()),
    }
    plan = [kind for kind in kinds for _ in range(connections)]
    ready.set()
    results = in_threads(
        len(plan), lambda index: loop(port, stop, 0, senders[plan[index]], ATTACKER_SOURCE)[1]
    )
    statuses = {kind: Counter() for kind in kinds}
    for kind, counted in zip(plan, results, strict=True):
        statuses[kind] += counted
    out.put({kind: dict(counted) for kind, counted in statuses.items()})


def bodies_sender(secret: str):
    bodies = itertools.cycle(WORST)
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    return lambda client: client.post("/v1/payments", headers, next(bodies))[0]


def publishable_sender(publishable: str):
    headers = {
        "Authorization": f"Bearer {publishable}",
        "Content-Type": "application/json",
        "X-Forwarded-For": ATTACKER,
    }
    return lambda client: client.post(TOKENS, headers, TOKEN_BODY)[0]


def unknown_key_sender():
    alphabet = string.ascii_letters + string.digits

    def send(client):
        made_up = "svc_sk_live_" + "".join(secrets.choice(alphabet) for _ in range(20))
        headers = {"Authorization": f"Bearer {made_up}", "X-Forwarded-For": ATTACKER}
        return client.request("GET", "/v1/payments", headers)[0]

    return send


def many_sources_sender(port: int, send):
    """`send` on a new connection each time, from the next of 1,016 source addresses (the
    loopback's 127.0.x.y): each address stays under the proxy's and the service's
    per-address limits while the whole flood does not."""
    sources = itertools.cycle(f"127.0.{a}.{b}" for a in range(1, 5) for b in range(1, 255))

    def send_from_next(_client):
        client = KeepAliveClient(port, next(sources))
        try:
            return send(client)
        finally:
            client.sock.close()

    return send_from_next


def phase(args, keys: dict, kinds: list[str]) -> dict:
    """Bob measured for `--seconds` (once his process runs), during the attack `kinds`."""
    context = get_context("spawn")
    stop, bob_out, attack_out = context.Event(), context.Queue(), context.Queue()
    attacker = None
    if kinds:
        attacking = context.Event()
        attacker = context.Process(
            target=attack,
            args=(args.port, kinds, keys, args.connections, attacking, stop, attack_out),
        )
        attacker.start()
        attacking.wait(120)
        time.sleep(args.warmup)
    measuring = context.Event()
    measurer = context.Process(target=bob, args=(args.port, keys["bob"], measuring, stop, bob_out))
    measurer.start()
    measuring.wait(120)
    time.sleep(args.seconds)
    stop.set()
    latencies, bob_statuses, customers = bob_out.get()
    measurer.join()
    attacked = attack_out.get() if attacker else {}
    if attacker:
        attacker.join()
    time.sleep(args.cooldown)  # in-flight work and buckets settle between phases
    _, p50, p99 = summary(latencies, args.seconds)
    return {"p50": p50, "p99": p99, "bob": bob_statuses, "customers": customers, "attack": attacked}


ATTACKS = [
    ("bodies", ["bodies"]),
    ("live bodies", ["live bodies"]),
    ("publishable", ["publishable"]),
    ("unknown keys", ["unknown keys"]),
    ("many sources", ["many sources"]),
    ("all together", ["bodies", "live bodies", "publishable", "unknown keys"]),
]


def phases(only: list[str] | None) -> list[tuple[str, list[str]]]:
    """Bob alone before and after each attack (of `only`, when given): on a shared machine the
    load drifts, so each attack is compared with the mean of the two baselines around it."""
    attacks = [attack for attack in ATTACKS if not only or attack[0] in only]
    return [("alone", [])] + [phase for attack in attacks for phase in (attack, ("alone", []))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_service_arguments(parser, "svc_bench_neighbours")
    parser.add_argument("--app", default=str(ROOT), help="the checkout whose code is served")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--seconds", type=float, default=10.0, help="per phase")
    parser.add_argument("--connections", type=int, default=4, help="per attack")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--cooldown", type=float, default=3.0)
    parser.add_argument("--shape", choices=["direct", "proxy", "routed"], default="routed")
    parser.add_argument(
        "--test-pool-nice", type=int, default=10, help="the test pool's niceness, without a weight"
    )
    parser.add_argument(
        "--test-pool-weight",
        type=int,
        default=1 if cgroup_cpu_setting() else 0,
        help="the routed test pool's cgroup CPU weight (1-10000; others 100), as deployed "
        "(docs/production.md); default 1 where a cgroup can be made, else 0: none, and "
        "--test-pool-nice instead",
    )
    parser.add_argument(
        "--only", action="append", choices=[name for name, _ in ATTACKS], help="repeatable"
    )
    args = parser.parse_args()

    env = service_env(args)
    recreate_database(args.database_url)
    manage(env, "migrate", "--no-input")
    done = subprocess.run(
        [PYTHON, "-c", SETUP], cwd=env["PYTHONPATH"], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(done.stderr)
    keys = json.loads(done.stdout)
    # A SIGTERM (a background run cannot be interrupted) stops what was started, too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    started = start_service(args, env)
    try:
        results = []
        for name, kinds in phases(args.only):
            results.append((name, phase(args, keys, kinds)))
            print(f"{name}: done", file=sys.stderr, flush=True)
        report(args, results)
    finally:
        for process in reversed(started):
            stop_web(process)


def stop_web(web: subprocess.Popen) -> None:
    """SIGTERM to the supervisor, which passes it to granian (a signal to the whole group
    would reach granian's workers first, and granian would respawn them); haproxy stops on
    it too."""
    web.send_signal(signal.SIGTERM)
    try:
        web.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(web.pid, signal.SIGKILL)


def report(args, results) -> None:
    print(
        f"app: {args.app}; shape {args.shape}; {args.seconds:.0f} s a phase, "
        f"{args.connections} connections each; the test pool at "
        + (
            f"CPU weight {args.test_pool_weight}"
            if args.test_pool_weight
            else f"nice {args.test_pool_nice}"
        )
    )
    print(f"load average: {os.getloadavg()[0]:.1f}")
    print("| phase | bob p50 ms | bob p99 ms | p50 ratio | p99 ratio | bob's answers | "
          "customers' tokens (201 of all) | attackers' answers |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for index, (name, result) in enumerate(results):
        customers = result["customers"]
        if name != "alone":
            around = (results[index - 1][1], results[index + 1][1])
            ratios = " | ".join(
                f"{result[p] / (sum(base[p] for base in around) / 2):.2f}" for p in ("p50", "p99")
            )
        else:
            ratios = "| "
        print(
            f"| {name} | {result['p50']:.1f} | {result['p99']:.1f} | {ratios} "
            f"| {statuses(result['bob'])} | {customers.get(201, 0)} of {sum(customers.values())}"
            f"{shed_note(customers)} "
            f"| {'; '.join(f'{kind}: {statuses(s)}' for kind, s in result['attack'].items())} |"
        )


def shed_note(customers: dict) -> str:
    return f" ({customers['shed']} shed)" if "shed" in customers else ""


def statuses(counted: dict) -> str:
    return ", ".join(f"{status}: {count}" for status, count in sorted(counted.items(), key=str))


if __name__ == "__main__":
    main()
