"""Where fits run (studies, dashboard jobs, bootstrap refits): in this process, in local worker
processes (loky), or as Ray tasks.

``get_executor(kind="local", jobs=1, address=None, *, threads=None)`` returns an executor:

* ``map(fn, items, *, resources=None)`` yields ``(index, result)`` as each item finishes, where
  ``result`` is ``fn(item)`` or the exception it raised (never raised here). ``fn`` must be a
  picklable top-level function and ``items`` picklable. Stopping the iteration early cancels the
  items not yet started.
* ``start(fn, items, *, should_stop=None)`` is ``map`` for work that runs beside the caller's own:
  worker processes get their first items at once, before the caller iterates (in this process the
  items still run when iterated); ``should_stop()`` is asked while it waits and ends the iteration
  with :class:`~dmlcore.errors.FitCancelled` (the caller then closes the executor, which stops its
  workers). A run's refits start this way beside its fit (:mod:`dmlcore.runs.heldout_residual`).
  The local worker processes of ``start`` run BESIDE_NICE lower in CPU priority than the caller's
  process (its niceness + BESIDE_NICE, at most 19): where they and the caller's own work are more
  than the cores, the caller's work, which it waits on first, keeps its core, and the workers have
  every core once it waits. The numbers do not change; the caller's own priority is left as it is.
  Niceness weighs processes against each other within a session where Linux groups sessions
  (autogroup), and against every process on the machine elsewhere: there the workers give way to
  other programs' work too.
* ``close()`` stops the workers (a Ray instance it started is shut down; one it found is left).

Kinds:

* ``"local"``, ``jobs=1``: in this process, one item after another.
* ``"local"``, ``jobs=N``: N worker processes (joblib's loky, started fresh, not forked from a
  threaded server). A worker that dies (killed, out of memory, a crash in native code) breaks
  the pool; the items it held are run again one at a time in a new pool, so the one that killed
  it fails alone with :class:`WorkerDied` and the others finish.
* ``"ray"``: one Ray task per item. With ``address`` it joins that cluster ("auto", "host:port"
  or "ray://host:port") and ships this copy of dmlcore to it (the nodes need its requirements);
  without, it starts a local instance with ``jobs`` CPUs (None: all of them). ``resources``
  ({"num_cpus": 1, "num_gpus": 0}) is what each task asks the scheduler for. A task whose worker
  died fails with :class:`WorkerDied`; Ray does not retry it.

Every item runs with ``threads`` torch, BLAS and OpenMP threads (default 1, or
``DMLCORE_TORCH_THREADS``), so N workers use N cores and results do not depend on the executor.
"""

from __future__ import annotations

import os
import socket
from abc import ABC, abstractmethod
from collections import deque
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path
from typing import Callable, Iterator, Sequence
from urllib.parse import urlsplit

from dmlcore.errors import DMLCoreError, FitCancelled
from dmlcore.process import default_threads, scoped_threads

EXECUTORS = ("local", "ray")
JOBS = 1   # the jobs setting's default: one item after another in this process (dmlcore.estimators.settings reads it)
CONNECT_TIMEOUT = 5.0  # seconds to reach a Ray address before giving up
POLL = 0.25            # seconds between should_stop() questions while start() waits on workers
# how much lower start()'s local workers run than their caller (niceness; module notes). The default fit's command
# with its 2 refit workers at +10 against +0, 3 alternating rounds twice on the shared 2-core machine (about one
# core for these): CPU seconds of the command and its workers 39.1 vs 41.7 and 38.6 vs 41.1, the same records
# (bench/results/perf/refit-arrangements.jsonl; issue 45)
BESIDE_NICE = 10


class WorkerDied(RuntimeError):
    """The process running an item died before returning its result."""


def get_executor(kind: str = EXECUTORS[0], jobs: int | None = JOBS, address: str | None = None, *,
                 threads: int | None = None) -> "Executor":
    """An executor by name: ``"local"`` (in process for jobs=1, worker processes otherwise) or ``"ray"``."""
    threads = default_threads() if threads is None else threads
    if not isinstance(threads, int) or threads < 1:
        raise DMLCoreError(f"threads must be an integer of at least 1; got {threads!r}.")
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise DMLCoreError(f"--jobs must be an integer of at least 1; got {jobs!r}.")
    if kind == "local":
        if address:
            raise DMLCoreError("--address is for --executor ray; leave it out for local workers.")
        jobs = jobs or JOBS
        return InlineExecutor(threads) if jobs == 1 else ProcessExecutor(jobs, threads)
    if kind == "ray":
        return RayExecutor(jobs, address, threads)
    raise DMLCoreError(f"Unknown executor {kind!r}; choose one of {', '.join(EXECUTORS)}.")


def call_with_threads(fn: Callable, item, threads: int):
    """``fn(item)`` with ``threads`` torch, BLAS and OpenMP threads (restored afterwards)."""
    from threadpoolctl import threadpool_limits

    with scoped_threads(threads), threadpool_limits(limits=threads):
        return fn(item)


def beside_niceness() -> int | None:
    """The niceness of a worker running beside this process (module notes): this process's + BESIDE_NICE, at most
    19; None where the system has no process priorities. A worker gets it before it imports anything (its pool's
    initializer is ``os.setpriority``), so that its imports, too, give way to the caller's work."""
    if not hasattr(os, "getpriority"):
        return None
    return min(19, os.getpriority(os.PRIO_PROCESS, 0) + BESIDE_NICE)


class Executor(ABC):
    """Runs ``fn`` over items and yields ``(index, result or exception)`` as each finishes."""

    kind = ""
    workers = 1

    @abstractmethod
    def map(self, fn: Callable, items: Sequence, *, resources: dict | None = None) -> Iterator[tuple[int, object]]:
        ...

    def start(self, fn: Callable, items: Sequence, *, should_stop=None) -> Iterator[tuple[int, object]]:
        """``map`` for work beside the caller's (module notes); here: ``map`` with ``should_stop()``
        asked after each item."""
        for index, result in self.map(fn, items):
            yield index, result
            _check_stop(should_stop)

    def close(self) -> None:
        """Release the workers."""

    def gpus_available(self) -> int | None:
        """GPUs this executor can hand a task (None: those torch sees on this machine)."""
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class InlineExecutor(Executor):
    """In this process, one item after another."""

    kind = "local"

    def __init__(self, threads: int):
        self.threads = threads

    def map(self, fn, items, *, resources=None):
        for index, item in enumerate(items):
            try:
                result = call_with_threads(fn, item, self.threads)
            except Exception as exc:  # the caller records it; the next item still runs
                result = exc
            yield index, result


class ProcessExecutor(Executor):
    """``jobs`` loky worker processes; a dead worker costs only the item that killed it."""

    kind = "local"

    def __init__(self, jobs: int, threads: int):
        self.workers, self.threads = jobs, threads
        self._pool = None
        self._niceness = None      # start(): its workers' niceness, set first thing in each, before any import

    def _get_pool(self):
        if self._pool is None:
            from joblib.externals.loky import ProcessPoolExecutor

            limit = str(self.threads)
            nice = {} if self._niceness is None else {"initializer": os.setpriority,
                                                      "initargs": (os.PRIO_PROCESS, 0, self._niceness)}
            self._pool = ProcessPoolExecutor(max_workers=self.workers, env={
                "DMLCORE_TORCH_THREADS": limit, "OMP_NUM_THREADS": limit, "MKL_NUM_THREADS": limit,
                "OPENBLAS_NUM_THREADS": limit}, **nice)
        return self._pool

    def _drop_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, kill_workers=True)
            self._pool = None

    def map(self, fn, items, *, resources=None):
        return self._results(fn, items, {}, deque(range(len(items))))

    def start(self, fn, items, *, should_stop=None):
        """``map`` with the first ``workers`` items handed to the workers now, before iteration, and every item
        run in workers BESIDE_NICE lower in priority than this process (module notes)."""
        self._niceness = beside_niceness()   # for the workers started from now on (module notes)
        waiting, running = deque(range(len(items))), {}
        while waiting and len(running) < self.workers:
            index = waiting.popleft()
            running[self._get_pool().submit(call_with_threads, fn, items[index], self.threads)] = index
        return self._results(fn, items, running, waiting, should_stop)

    def _results(self, fn, items, running: dict, waiting: deque, should_stop=None):
        from concurrent.futures.process import BrokenProcessPool

        suspects: deque[int] = deque()       # held by a pool that broke: rerun one at a time
        # running: future -> index; waiting: not submitted yet
        try:
            while waiting or suspects or running:
                source, limit = (suspects, 1) if suspects else (waiting, self.workers)
                while source and len(running) < limit:
                    index = source.popleft()
                    try:
                        future = self._get_pool().submit(call_with_threads, fn, items[index], self.threads)
                    except BrokenProcessPool:   # a worker died since the last wait: its fit's future says which
                        source.appendleft(index)
                        if not running:
                            self._drop_pool()
                        break
                    running[future] = index
                done = set()
                while running and not done:     # polled, so that should_stop is asked while workers fit
                    done, _ = wait(list(running), timeout=None if should_stop is None else POLL,
                                   return_when=FIRST_COMPLETED)
                    _check_stop(should_stop)
                broke = False
                for future in done:
                    index = running.pop(future)
                    error = future.exception()
                    if isinstance(error, BrokenProcessPool):
                        broke = True
                        running[future] = index  # counted with the other victims below
                        continue
                    yield index, (future.result() if error is None else error)
                if broke:
                    victims = list(running.values())
                    running.clear()
                    self._drop_pool()
                    if len(victims) == 1:
                        yield victims[0], WorkerDied("the worker process died while running this fit (killed, out "
                                                     "of memory or a crash); run the study again to retry it")
                    else:
                        suspects.extend(victims)
        finally:
            for future in running:
                future.cancel()

    def close(self) -> None:
        self._drop_pool()


class RayExecutor(Executor):
    """One Ray task per item, on a cluster (``address``) or a local instance."""

    kind = "ray"

    def __init__(self, jobs: int | None, address: str | None, threads: int):
        try:
            import ray
        except ImportError:
            raise DMLCoreError("Ray is not installed; pip install -r requirements.txt (ray==2.60.0).") from None
        self.threads, self._ray, self._started = threads, ray, False
        if not ray.is_initialized():
            package = str(Path(__file__).resolve().parent)   # the dmlcore folder
            try:
                if address:
                    _check_reachable(address)
                    ray.init(address=address, runtime_env={"py_modules": [package]}, logging_level="ERROR",
                             log_to_driver=False)
                else:
                    root = str(Path(package).parent)
                    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
                    ray.init(num_cpus=jobs, include_dashboard=False, logging_level="ERROR", log_to_driver=False,
                             runtime_env={"env_vars": {"PYTHONPATH": path}})
            except DMLCoreError:
                raise
            except Exception as exc:
                where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
                hint = ("; a cluster with token authentication also needs RAY_AUTH_MODE=token and its token "
                        "(~/.ray/auth_token or RAY_AUTH_TOKEN)" if address and "RAY_AUTH_MODE" not in os.environ else "")
                raise DMLCoreError(f"Cannot start or reach {where}: {' '.join(str(exc).split())[:300]}{hint}") from None
            self._started = True
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self._call = ray.remote(call_with_threads)

    def gpus_available(self) -> int:
        return int(self._ray.cluster_resources().get("GPU", 0))

    def map(self, fn, items, *, resources=None):
        ray = self._ray
        wants = {"num_cpus": 1, "num_gpus": 0, **(resources or {})}
        task = self._call.options(num_cpus=wants["num_cpus"], num_gpus=wants["num_gpus"], max_retries=0)
        window = max(2 * self.workers, 8)  # tasks handed to Ray at once: enough to keep every CPU busy
        waiting, running = deque(range(len(items))), {}
        try:
            while waiting or running:
                while waiting and len(running) < window:
                    index = waiting.popleft()
                    running[task.remote(fn, items[index], self.threads)] = index
                ready, _ = ray.wait(list(running), num_returns=1)
                for ref in ready:
                    index = running.pop(ref)
                    try:
                        result = ray.get(ref)
                    except Exception as exc:
                        result = _ray_cause(ray, exc)
                    yield index, result
        finally:
            for ref in running:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False


def _check_stop(should_stop) -> None:
    if should_stop is not None and should_stop():
        raise FitCancelled("The refits were cancelled.")


def _ray_cause(ray, exc: Exception) -> Exception:
    """The exception the task raised, or WorkerDied when its process died."""
    if isinstance(exc, (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError)):
        return WorkerDied("the Ray worker running this fit died (killed, out of memory or a crash); "
                          "run the study again to retry it")
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, Exception) else exc


def _check_reachable(address: str) -> None:
    """A one-line DMLCoreError unless something listens at a ``host:port`` Ray address."""
    if address == "auto":
        return
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        host, port = parts.hostname, parts.port or (10001 if parts.scheme == "ray" else 6379)
    except ValueError:
        host = port = None
    if not host:
        raise DMLCoreError(f"--address must look like host:port, ray://host:port or auto; got {address!r}.")
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise DMLCoreError(f"Cannot reach a Ray cluster at {address!r} ({exc.strerror or exc}); start one with "
                           f"'ray start --head' or leave --address out for a local instance.") from None
