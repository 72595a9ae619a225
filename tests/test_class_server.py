"""`bash scripts/run.sh --class`: a class's server, reachable on the machine's network address, with
the address students open and the teacher code printed; the plain command stays on this machine."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.browser_support import _free_port

ROOT = Path(__file__).resolve().parents[1]


def _start(tmp_path: Path, *args: str):
    port = _free_port()
    env = dict(os.environ, DMLCORE_HOME=str(tmp_path / "home"), DMLCORE_SKIP_SETUP="1",
               DMLCORE_TEACHER_CODE="c0ffee")
    log = open(tmp_path / f"run-{port}.log", "w+")
    proc = subprocess.Popen(["bash", "scripts/run.sh", *args, "--server.port", str(port)], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, port, log


def _healthy(url: str, timeout: float = 90.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            return urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok"
        except OSError:
            time.sleep(0.5)
    return False


def _stop(proc) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(30)


def test_class_serves_the_network_address_it_prints(tmp_path):
    proc, port, log = _start(tmp_path, "--class")
    try:
        time.sleep(1.0)
        deadline = time.time() + 30
        while "Teacher code" not in Path(log.name).read_text() and time.time() < deadline:
            time.sleep(0.2)
        text = Path(log.name).read_text()
        printed = re.findall(rf"http://(\d+\.\d+\.\d+\.\d+):{port}", text.split("Teacher code")[0])
        assert "Teacher code for the Class page: c0ffee" in text
        if not printed:
            pytest.skip("this machine has no non-loopback IPv4 address to serve a class on")
        assert not any(ip.startswith("127.") for ip in printed), printed
        assert _healthy(f"http://{printed[0]}:{port}"), text
    finally:
        _stop(proc)


def test_plain_run_stays_on_this_machine(tmp_path):
    proc, port, log = _start(tmp_path)
    try:
        assert _healthy(f"http://127.0.0.1:{port}"), Path(log.name).read_text()
        external = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
        external = [ip for ip in external if re.fullmatch(r"\d+(\.\d+){3}", ip) and not ip.startswith("127.")]
        if not external:
            pytest.skip("no non-loopback IPv4 address to try")
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://{external[0]}:{port}/_stcore/health", timeout=3)
    finally:
        _stop(proc)
