"""What the real-browser tests share: Debian's Chromium (never downloaded), a free loopback port
and waiting for a ``streamlit run`` server to answer."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def require_chromium() -> None:
    """Skip (with the reason) when Chromium is missing outside CI; under CI that is a failure."""
    if Path(CHROMIUM).is_file():
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    pytest.skip(f"{CHROMIUM} is not installed; run `apt-get install -y chromium` to run the browser test")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(url: str, process: subprocess.Popen, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"streamlit did not answer on {url} within {timeout:.0f} s")


@contextmanager
def streamlit_server(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """``streamlit run app.py`` on a free loopback port with ``env``, its output in ``log_path``;
    yields the URL once the server answers, and stops it afterwards."""
    url = f"http://127.0.0.1:{free_port()}"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", url.rsplit(":", 1)[1],
             "--server.address", "127.0.0.1", "--server.headless", "true",
             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            wait_until_healthy(url, process)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
