"""What the real-browser tests share: Debian's Chromium, a Streamlit server, page helpers."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(home: Path, log_name: str, **env_extra: str):
    """A Streamlit server on a free port with DMLCORE_HOME=home (and ``env_extra``).

    Yields (base URL, process); stops the server by its PID unless the test killed it, and
    fails the test if the server's log holds a traceback.
    """
    port = _free_port()
    log_path = home / log_name
    env = dict(os.environ, DMLCORE_HOME=str(home), PYTHONPATH=str(ROOT), **env_extra)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
             "--server.port", str(port), "--server.headless", "true"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                if urllib.request.urlopen(f"{base}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(f"The Streamlit server did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    log = log_path.read_text()
    assert "Traceback" not in log, log[-3000:]


def idle(page, pause: int = 400):
    """Wait until the script has stopped running, and stays stopped for ``pause`` ms."""
    page.wait_for_selector(IDLE)
    page.wait_for_timeout(pause)
    page.wait_for_selector(IDLE)


def nav(page, title: str, pause: int = 800):
    page.locator("[data-testid=stTopNavLink]", has_text=title).click()
    page.wait_for_url(re.compile(rf"/{title.lower()}\b|/$"))
    idle(page, pause)


def no_exception(page):
    assert page.locator("[data-testid=stException]").count() == 0, page.locator(
        "[data-testid=stException]").first.inner_text()
