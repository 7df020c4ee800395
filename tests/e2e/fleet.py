"""Several nodes of the service behind Debian's haproxy, as docs/production.md runs them: each node
a process group of its own (scripts/serve.py), every node on one PostgreSQL and one Redis, the
load balancer running deploy/haproxy.cfg as it is. tests/e2e/test_fleet.py drives it; the
proxy tests (tests/e2e/standins.py) put the same LoadBalancer in front of stand-in pools."""

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.e2e.processes import ROOT, wait_for
from tests.e2e.stack import children, is_dead, quiet_port

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def release(name: str, env: dict, log: Path) -> subprocess.Popen:
    """`manage.py migrate`, the release step a node runs before it serves."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


class Process:
    """scripts/serve.py NAME in a session of its own (so a kill -9 takes its workers too)."""

    def __init__(self, name: str, env: dict, log: Path):
        self.name, self.env, self.log = name, env, log
        self.process = self._start()

    def _start(self) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "scripts/serve.py", self.name],
            cwd=ROOT,
            env=self.env,
            stdout=self.log.open("a"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def restart(self) -> None:
        assert self.process.poll() is not None
        self.process = self._start()

    def signal(self, signum: int) -> None:
        """To the whole group: what a supervisor stopping a node, or a dying machine, does."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)

    def wait_gone(self) -> None:
        """Until every process of the group has exited (its sockets closed)."""
        self.process.wait(10)

        def gone() -> bool:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                return True
            return False

        wait_for(gone, timeout=10)

    def stop(self) -> None:
        """At the end of a test: the whole group at once, nothing left behind."""
        self.signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)


class Node(Process):
    """One node's web server (granian) on a port of its own: its live pool (`web`) or its
    test-mode pool (`web-test`)."""

    def __init__(self, env: dict, log: Path, pool: str = "web"):
        self.port = quiet_port()
        super().__init__(pool, {**env, "WEB_PORT": str(self.port)}, log)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def answers(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 1):
            return True
        return False


class LoadBalancer:
    """haproxy running deploy/haproxy.cfg as systemd's unit does (master-worker: a reload is
    SIGUSR2 to the master), plus a stats socket (a second config file) through which the test
    reads what haproxy holds."""

    def __init__(self, servers: dict[str, str], work: Path):
        """`servers`: the config's NODE1, NODE2 (and NODE1_TEST) -> host:port."""
        self.port, self.socket = quiet_port(), work / "haproxy.sock"
        extra = work / "haproxy-test.cfg"
        extra.write_text(f"global\n    stats socket {self.socket} level admin\n")
        env = {**os.environ, **servers, "LB_BIND": f"127.0.0.1:{self.port}"}
        peer = quiet_port()
        while peer == self.port:  # both are free until haproxy binds them
            peer = quiet_port()
        env["LB_PEER"] = f"127.0.0.1:{peer}"
        config = ["-f", str(ROOT / "deploy" / "haproxy.cfg"), "-f", str(extra)]
        self.process = subprocess.Popen(
            [HAPROXY, "-W", "-db", *config],
            env=env,
            stdout=(work / "haproxy.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        self.base_url = f"http://127.0.0.1:{self.port}"

    def command(self, line: str) -> str:
        """A line on the stats socket (the current worker's) -> its answer; "" while there is
        no worker to answer (starting, or between the two of a reload)."""
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as client:
            client.connect(str(self.socket))
            client.sendall(line.encode() + b"\n")
            return b"".join(iter(lambda: client.recv(65536), b"")).decode()
        return ""

    def stats(self, backend: str = "web") -> dict[str, dict[str, str]]:
        """haproxy's `show stat`, by server of `backend`: {name: {column: value}}."""
        lines = self.command("show stat").splitlines()
        if not lines:
            return {}
        columns = lines[0].removeprefix("# ").split(",")
        rows = [dict(zip(columns, line.split(","), strict=False)) for line in lines[1:] if line]
        return {row["svname"]: row for row in rows if row["pxname"] == backend}

    def tables_settled(self) -> bool:
        """Whether the worker is done learning its tables (from the one it replaced, or waiting
        ~5 s for none after a start): a reload before then hands nothing on."""
        flags = re.search(r"flags=0x([0-9a-f]+)", self.command("show peers"))
        return bool(flags) and int(flags.group(1), 16) & 0x3 == 0x3  # haproxy's RESYNC_FINISHED

    def reload(self) -> None:
        """`systemctl reload haproxy`: returns once the old worker has exited, which it does
        after handing its tables to the new one (or giving up on it, after 5 s)."""
        old = children(self.process.pid)
        self.process.send_signal(signal.SIGUSR2)
        wait_for(lambda: all(is_dead(pid) for pid in old), timeout=30)

    def servers_up(self, backend: str = "web") -> set[str]:
        return {name for name, row in self.stats(backend).items() if row["status"] == "UP"}

    def served(self) -> dict[str, int]:
        """Requests each node has been given so far."""
        return {name: int(row["stot"]) for name, row in self.stats().items()}

    def in_flight(self) -> dict[str, int]:
        return {
            name: int(row["scur"])
            for name, row in self.stats().items()
            if name not in ("BACKEND", "FRONTEND")
        }

    def wait_until_up(self, *servers: str, backend: str = "web") -> None:
        wait_for(lambda: set(servers) <= self.servers_up(backend), timeout=60)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
