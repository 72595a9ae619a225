"""Where and with what a study ran, for every output (report.html, provenance.json, the CLI): the
dmlcore version and, in a git checkout, its commit; the versions of the libraries that shape the
numbers; the machine, its cores, and the 1-minute load average when the study started and ended.

``snapshot() -> dict`` reads the machine now; ``provenance(start, end) -> dict`` joins two snapshots;
``provenance_line(p) -> str`` says it in one line.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path

from dmlcore._version import __version__

LIBRARIES = ("torch", "scikit-learn", "numpy", "pandas", "scipy")


def _commit() -> str | None:
    """The git commit of the dmlcore source (with "+changes" when the tree differs), None outside a checkout."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def load_1min() -> float | None:
    """The 1-minute load average now (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):     # not on every platform
        return None


def processor() -> str:
    """The processor's model name (/proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def snapshot() -> dict:
    """The machine now: time (UTC, ISO), 1-minute load average."""
    return {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load_1min": load_1min()}


def provenance(start: dict, end: dict | None = None) -> dict:
    """Everything a reader needs to know where the numbers came from (JSON values)."""
    end = end or snapshot()
    return {"dmlcore": __version__, "commit": _commit(),
            "libraries": {name: _version(name) for name in LIBRARIES},
            "python": platform.python_version(), "machine": platform.node() or None, "platform": platform.platform(),
            "processor": processor(), "cores": os.cpu_count(),
            "started": start.get("time"), "ended": end.get("time"),
            "load_1min_start": start.get("load_1min"), "load_1min_end": end.get("load_1min")}


def provenance_line(p: dict) -> str:
    """One line: "dmlcore 0.2.0 (commit abc) · torch 2.x, scikit-learn 1.x, ... · host, 16 cores (CPU) · load 1.2 → 3.4"."""
    libs = ", ".join(f"{k} {v}" for k, v in (p.get("libraries") or {}).items() if v)
    commit = f" (commit {p['commit']})" if p.get("commit") else ""
    load = " → ".join("?" if v is None else f"{v:g}" for v in (p.get("load_1min_start"), p.get("load_1min_end")))
    return (f"dmlcore {p.get('dmlcore')}{commit}, Python {p.get('python')} · {libs} · {p.get('machine') or 'this machine'}, "
            f"{p.get('cores')} cores ({p.get('processor')}) · 1-minute load at start → end: {load} · "
            f"{p.get('started')} → {p.get('ended')}")
