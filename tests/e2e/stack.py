"""The whole stack as a newcomer starts it: a fresh copy of the repository, a virtualenv made by
`pip install .` alone (no test extras), and `make run` (honcho, the Procfile, scripts/supervise.py)
in the foreground. docs/operations.md "Smoke test".

The runtime-only virtualenv is cached under var/runtime-venv and rebuilt only when pyproject.toml
changes. Each run gets its own copy (its own var/: SQLite file, broker folder, .env) and, on
PostgreSQL, its own scratch database, so it never touches the developer's data.
"""

import contextlib
import fcntl
import hashlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import environ
import psycopg
import requests

from tests.e2e.processes import ROOT, wait_for

# One per interpreter: CI runs the smoke test on each supported Python (scripts/test.sh).
RUNTIME_VENV = ROOT / "var" / f"runtime-venv-{sys.version_info.major}.{sys.version_info.minor}"
START_TIMEOUT = 120.0  # readiness polling on a busy 2-core box, not a timing assertion
# What honcho or the supervisor print when a process ends on its own.
EXIT_LINE = re.compile(r"supervise: (\S+): EXITED|system +\| (\S+) stopped")


def fresh_copy(destination: Path) -> Path:
    """The repository's files as a clone would have them (tracked and new, not ignored: no
    .venv, var/ or .env), with their modification times."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in listed)):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def runtime_venv(copy: Path) -> Path:
    """The cached `pip install .` virtualenv (scripts/install.sh), rebuilt (from `copy`) when
    pyproject.toml changed, by one test process at a time: under pytest-xdist two tests that
    need it (the fresh clone's, the upgrade's) had built it at once, each removing what the
    other installed. Its `.installed` stamp is touched so the Makefile sees it as up to date."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    stamp = RUNTIME_VENV / ".pyproject-sha256"
    RUNTIME_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(RUNTIME_VENV.with_name(f"{RUNTIME_VENV.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # given back when the file closes
        if not stamp.is_file() or stamp.read_text() != digest:
            shutil.rmtree(RUNTIME_VENV, ignore_errors=True)
            # The install step production runs (the Dockerfile's too): scripts/install.sh.
            install = ["bash", "scripts/install.sh", str(RUNTIME_VENV)]
            subprocess.run(install, cwd=copy, env=newcomer_env(PYTHON=sys.executable), check=True)
            stamp.write_text(digest)
        (RUNTIME_VENV / ".installed").touch()
    return RUNTIME_VENV


@contextlib.contextmanager
def scratch_database(database_url: str, suffix: str = "smoke"):
    """A PostgreSQL database of its own next to `database_url`'s, dropped afterwards."""
    config = environ.Env.db_url_config(database_url)
    name = f"{config['NAME']}_{suffix}"
    server = {
        "host": config["HOST"] or "127.0.0.1",
        "port": config["PORT"] or 5432,
        "user": config["USER"] or "postgres",
    }

    def run(sql: str) -> None:
        with psycopg.connect(**server, dbname="postgres", autocommit=True) as conn:
            conn.execute(sql)

    run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    run(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://{server['user']}@{server['host']}:{server['port']}/{name}"
    finally:
        run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def quiet_port() -> int:
    """A free port below the kernel's ephemeral range (32768-60999), so no other process's
    bind-to-port-0 takes it between this check and granian binding it."""
    while True:
        port = random.randint(20000, 32000)
        with socket.socket() as sock:
            with contextlib.suppress(OSError):
                sock.bind(("127.0.0.1", port))
                return port


def newcomer_env(**extra) -> dict:
    """A shell's environment with nothing of the test suite's (settings module, secrets, make's
    own variables): what a newcomer has, plus `extra`."""
    kept = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    return {**kept, **extra}


def ctrl_c_as_in_a_terminal() -> None:
    """The command's SIGINT as a terminal gives it, whatever the caller's: `make test` run as a
    background job of a non-interactive shell inherits SIGINT ignored, and an ignored signal
    stays ignored across exec, so `make serve` ignored the test's Ctrl-C (issue 38)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Collected:
    """A command started in its own session, its output collected line by line."""

    def __init__(self, argv: list[str], cwd: Path, env: dict):
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=ctrl_c_as_in_a_terminal,
        )
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def output(self) -> str:
        return "".join(self.lines)


class Stack(Collected):
    """`make run` in `copy`, its output collected line by line."""

    def __init__(self, copy: Path, env: dict):
        self.copy, self.env, self.port = copy, env, quiet_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        super().__init__(["make", "run", f"PORT={self.port}"], copy, env)

    def count(self, pattern: str) -> int:
        return sum(1 for line in self.lines if re.search(pattern, line))

    def exits(self) -> list[str]:
        return [line for line in self.lines if EXIT_LINE.search(line)]

    def wait_until_ready(self, workers_ready: int = 3) -> None:
        """Every Procfile process up: the web answers, the three Celery workers (default,
        webhooks of live and of test mode) and beat started."""

        def ready() -> bool:
            assert self.process.poll() is None, "make run ended:\n" + self.output()
            assert not self.exits(), "a process exited:\n" + self.output()
            return (
                self.count(r"@\S+ ready\.") >= workers_ready
                and self.count(r"beat: Starting") >= 1
                and self.answers()
            )

        try:
            wait_for(ready, timeout=START_TIMEOUT)
        except AssertionError as error:
            raise AssertionError(f"{error}; make run said:\n{self.output()}") from None

    def answers(self) -> bool:
        try:
            requests.get(self.base_url + "/v1/", timeout=2)
            return True
        except requests.ConnectionError:
            return False

    def supervised(self, name: str) -> int:
        """The pid of the Procfile process `name` (the supervisor's child)."""
        for pid in descendants(self.process.pid):
            argv = cmdline(pid)
            if argv[1:3] == ["scripts/supervise.py", name]:
                return children(pid)[0]
        raise LookupError(f"no supervised {name} process:\n{self.output()}")

    def stop(self) -> None:
        """Ctrl-C, as a developer stops it; anything left over is killed."""
        left = descendants(self.process.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(60)
        finally:
            for pid in [self.process.pid, *left]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(FileNotFoundError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def cmdline(pid: int) -> list[str]:
    with contextlib.suppress(FileNotFoundError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return []


def is_dead(pid: int) -> bool:
    """Gone, or a zombie its parent has not reaped yet (its sockets are closed either way)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_for_new_child(parent: int, old: list[int]) -> None:
    wait_for(lambda: set(children(parent)) - set(old), timeout=30)


def listens_on(pid: int, port: int) -> bool:
    """Whether `pid` holds a listening TCP socket on `port`. granian's workers each bind their own
    (SO_REUSEPORT) once their app is loaded, so a started worker is not yet a serving one."""
    sockets = set()
    for fd in Path(f"/proc/{pid}/fd").glob("*"):
        with contextlib.suppress(OSError):
            sockets.add(os.readlink(fd))
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            listening = fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port
            if listening and f"socket:[{fields[9]}]" in sockets:
                return True
    return False
