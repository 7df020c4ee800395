"""Debian's Prometheus and Celery beat as real processes, for the end-to-end tests of /metrics
and /readyz (docs/observability.md)."""

import contextlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.e2e.processes import ROOT, free_port, service_env, wait_for

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
SCRAPE_CONFIG = """\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: svc
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials: {token}
    static_configs:
      - targets: ["{target}"]
"""


def prometheus_or_skip() -> str:
    if not Path(PROMETHEUS).is_file():
        pytest.skip(
            "Debian's prometheus is not installed (apt-get install prometheus; scripts/test.sh "
            "installs it under CI)"
        )
    return PROMETHEUS


@contextlib.contextmanager
def prometheus(target: str, token: str, folder: Path):
    """Prometheus on loopback scraping `target` (host:port) every second with `token`;
    yields its origin."""
    config = folder / "prometheus.yml"
    config.write_text(SCRAPE_CONFIG.format(token=token, target=target))
    port = free_port()
    process = subprocess.Popen(
        [prometheus_or_skip(), f"--config.file={config}", f"--storage.tsdb.path={folder / 'tsdb'}"]
        + [f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    origin = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(f"{origin}/-/ready", process), timeout=60)
        yield origin
    finally:
        process.terminate()
        process.wait(30)


def _answers(url: str, process: subprocess.Popen) -> bool:
    assert process.poll() is None, f"prometheus exited with {process.returncode}"
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.ConnectionError:
        return False


def promql(origin: str, query: str) -> list[tuple[dict, float]]:
    """An instant query through Prometheus's HTTP API: [(labels, value), ...]."""
    answer = requests.get(f"{origin}/api/v1/query", params={"query": query}, timeout=10).json()
    assert answer["status"] == "success", answer
    return [(row["metric"], float(row["value"][1])) for row in answer["data"]["result"]]


def scalar(origin: str, query: str) -> float | None:
    """The one value `query` gives, or None while it gives none."""
    rows = promql(origin, query)
    assert len(rows) <= 1, rows
    return rows[0][1] if rows else None


@contextlib.contextmanager
def celery_beat(folder: Path, **env):
    """Celery beat as the Procfile starts it, its schedule file in `folder`."""
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "beat"]
        + ["--schedule", str(folder / "celerybeat-schedule"), "--loglevel", "WARNING"],
        cwd=ROOT,
        env=service_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        process.terminate()
        process.wait(30)


def eventually(check, timeout: float = 60.0):
    """Poll `check` until it returns a truthy value (Prometheus scrapes every second)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.5)
