"""The dashboard server's registry, set up from the environment."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from dmlcore.errors import DMLCoreError
from dmlcore.executors import get_executor
from dmlcore.jobs.queue import QUANTUM
from dmlcore.jobs.registry import JobRegistry
from dmlcore.store import RunStore, default_store_path


def server_registry(home: str | os.PathLike | None = None) -> JobRegistry:
    """The job registry of a dashboard server, set up from the environment.

    ``DMLCORE_WORKERS`` fits at once (default 2); ``DMLCORE_EXECUTOR``: "local" worker processes
    (default), "ray" (a cluster at ``DMLCORE_RAY_ADDRESS``, which implies it, else a local Ray
    instance) or "inline" (the server's own threads); ``DMLCORE_QUEUE_QUANTUM`` (seconds, see
    :class:`FairQueue`); ``DMLCORE_CHANNEL_HOST``, the address Ray workers on other machines reach
    this server at. The runs go to the run store in ``home`` (default ``DMLCORE_HOME``) and the
    queue to ``queue.sqlite3`` beside it.
    """
    store = RunStore(Path(home) / "runs.sqlite3" if home is not None else default_store_path())
    workers = _env_number("DMLCORE_WORKERS", 2, int, 1)
    address = os.environ.get("DMLCORE_RAY_ADDRESS") or None
    kind = os.environ.get("DMLCORE_EXECUTOR", "ray" if address else "local")
    if kind not in ("local", "ray", "inline"):
        raise DMLCoreError(f"DMLCORE_EXECUTOR={kind!r} is not known; use local, ray or inline.")
    executor = None
    if kind != "inline":
        # local: at least two processes (one is the executor's in-process mode); the dispatchers
        # still run no more than ``workers`` fits at once
        jobs = max(2, workers) if kind == "local" else workers
        executor = _in_lasting_thread(lambda: get_executor(kind, jobs=jobs, address=address))
    registry = JobRegistry(workers, store, executor=executor, job_file=store.path.parent / "queue.sqlite3",
                           quantum=_env_number("DMLCORE_QUEUE_QUANTUM", QUANTUM, float, 0.001),
                           channel_host=os.environ.get("DMLCORE_CHANNEL_HOST", "127.0.0.1"),
                           timings=store.timings())
    return registry


def _in_lasting_thread(make):
    """``make()`` called in a thread that lasts as long as the process; its value.

    Ray starts a local instance's processes with a parent-death signal bound to the starting
    thread, and Streamlit's script threads end after each run: started from one, the instance
    was killed a second later.
    """
    box, ready = {}, threading.Event()

    def keeper():
        try:
            box["value"] = make()
        except BaseException as exc:
            box["error"] = exc
        ready.set()
        threading.Event().wait()

    threading.Thread(target=keeper, name="dmlcore-executor", daemon=True).start()
    ready.wait()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _env_number(name: str, default, kind, minimum):
    raw = os.environ.get(name)
    try:
        value = kind(raw) if raw else default
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise DMLCoreError(f"{name}={raw!r} is not valid; give a number of at least {minimum}.")
    return value
