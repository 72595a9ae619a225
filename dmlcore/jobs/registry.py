"""Background fits for one server: a fair queue, live progress, cancellation, worker processes.

The dashboard creates one registry per server process (``st.cache_resource``); this module never
imports Streamlit. A few dispatcher threads take jobs from the queue in a fair order (see
:class:`FairQueue`). A fit job runs in a worker process of the given executor (the studies'
executors: local processes, or Ray tasks) and streams its progress back over a local socket
(:class:`Channel`), through which a cancel reaches it too; without an executor it runs in the
dispatcher thread (tests, scripts).

Public API
----------
``JobRegistry(workers: int = 1, store: RunStore | None = None, *, executor=None,
job_file: str | os.PathLike | None = None, quantum: float = QUANTUM, channel_host: str = "127.0.0.1",
max_pending_per_owner: int = 20, max_finished_per_owner: int = 20, timings=())``

* ``executor``: an object with ``map(fn, items, *, resources=None)`` yielding ``(index,
  result_or_exception)`` and ``close()`` (``dmlcore.studies.executors.get_executor``), with at
  least ``workers`` processes; the registry closes it. ``None``: fits run in this process.
* ``job_file``: an SQLite file in which the queue is kept. A registry opened on the file of one
  that stopped (a server restart) queues the fits that were waiting or running again; those it
  cannot restore, or that were interrupted more than ``MAX_ATTEMPTS`` times, end "failed" with a message
  saying so. Finished jobs come back with their ``run_id`` (``run`` None: read it from the store).
* ``timings``: earlier fits' ``{"method", "learner", "folds", "epochs", "n", "seconds", ...}``
  rows (e.g. from the run store) from which the cost of a fit is estimated.

Methods:

* ``submit(owner, label, task, *, cost=None) -> str`` -- queue ``task(report, should_stop) -> Run``
  (run in this process; ``cost``: estimated seconds, default one quantum); returns the job id
  (uuid4 hex). ``report(event)`` takes the events of :mod:`dmlcore.progress`; ``should_stop()``
  turns True once the job is cancelled. Raises DMLCoreError when the owner already has
  ``max_pending_per_owner`` jobs queued or running.
* ``submit_fit(owner, label, *, data, method, truth=None, dataset=None, **fit_kwargs) -> str`` --
  a job running ``dmlcore.runs.fit_run(data, method, truth=..., dataset=..., **fit_kwargs)``. In a
  worker process (or after a restart) the truth is simulated again from ``fit_kwargs["data_params"]``
  (the data set's parameters, with its name under ``"dataset"``). An unknown method raises
  DMLCoreError and a bad keyword TypeError at once.
* ``submit_call(owner, label, fn, item, *, cost=None, group=None) -> str`` -- queue ``fn(item)``
  (a worker process runs it when there is an executor); its value becomes the snapshot's
  ``result``. For studies (dmlcore.study_jobs): not kept across restarts, no pending limit.
* ``estimate(method, config, n) -> float`` -- estimated seconds of such a fit.
* ``wait_any(job_ids, owner, timeout=None) -> str | None`` -- the first of them to end.
* ``get(job_id, owner) -> JobSnapshot | None`` -- None for an unknown id, another owner's job,
  or a finished job dropped from memory (its run stays in the store).
* ``list(owner) -> list[JobSnapshot]`` -- the owner's jobs, newest first.
* ``cancel(job_id, owner) -> bool`` -- a queued job becomes "cancelled" at once; a running one
  gets ``cancel_requested`` and ends "cancelled" when the fit next checks. False when there is
  nothing to cancel.
* ``dismiss(job_ids, owner) -> int`` -- forget the owner's ended jobs among ``job_ids``.
* ``wait(job_id, owner, timeout=None) -> JobSnapshot | None`` -- block until the job has ended.
* ``close()`` -- stop: queued jobs are not started (they stay queued in ``job_file``), running
  fits are asked to stop, the executor is closed.

``server_registry(home=None) -> JobRegistry`` -- the dashboard server's registry, set up from the
environment (``DMLCORE_WORKERS``, ``DMLCORE_EXECUTOR``, ``DMLCORE_RAY_ADDRESS``, ...).

``JobSnapshot`` (frozen dataclass, a copy): ``id``, ``owner``, ``label``, ``status`` ("queued",
"running", "done", "failed", "cancelled"), ``progress`` (0..1), ``stage``, ``fold``, ``losses``
({"s"|"g"|"f": {fold: {"epoch", "train", "val"}}}, each series thinned to at most
``MAX_LOSS_POINTS`` evenly spaced epochs), ``error``, ``run``, ``run_id``, ``created`` /
``started`` / ``finished`` (``time.time()``), ``cancel_requested``, ``cost`` (estimated seconds
of the fit), ``position`` (queued: 1 for the next job to start, over all owners), ``starts_in``
and ``ends_in`` (estimated seconds from now; ``ends_in`` also while running), ``restored``
(queued again after a restart), ``group`` and ``result`` (call jobs); properties ``active`` and
``ended``.

Errors: DMLCoreError and FitDiverged messages are kept as they are; any other exception becomes
"unexpected <Type>: <message>" with its traceback logged (logger ``dmlcore.jobs``); a worker
process that dies fails its job, not the registry.
"""

from __future__ import annotations

import heapq
import inspect
import logging
import os
import pickle
import secrets
import sqlite3
import threading
import time
import uuid
from collections import deque
from contextlib import closing
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Callable

from threadpoolctl import threadpool_limits

from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.estimators import METHODS, get_method
from dmlcore.runs import Run, fit_run, fits_in_run
from dmlcore.store import RunStore, default_store_path

logger = logging.getLogger(__name__)

Report = Callable[[dict], None]
ShouldStop = Callable[[], bool]
Task = Callable[[Report, ShouldStop], Run]

ENDED = ("done", "failed", "cancelled")
MAX_LOSS_POINTS = 400
QUANTUM = 60.0          # seconds of estimated compute an owner may start per turn
MAX_ATTEMPTS = 2        # restarts a running fit survives before it is given up
FLUSH_SECONDS = 0.25    # a worker sends its progress at most this often (and at each stage)
PLAN_SECONDS = 1.0      # queue estimates are recomputed at most this often when nothing changed


# ------------------------------------------------------------------ snapshots
@dataclass(frozen=True)
class JobSnapshot:
    """A job's state at one moment."""

    id: str
    owner: str
    label: str
    status: str
    progress: float
    stage: str
    fold: int | None
    losses: dict
    error: str | None
    run: Run | None
    run_id: str | None
    created: float
    started: float | None
    finished: float | None
    cancel_requested: bool
    cost: float | None = None
    position: int | None = None
    starts_in: float | None = None
    ends_in: float | None = None
    restored: bool = False
    group: str | None = None
    result: object = None

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")

    @property
    def ended(self) -> bool:
        return self.status in ENDED


@dataclass
class _LossSeries:
    """One model's losses on one fold, thinned to at most MAX_LOSS_POINTS evenly spaced epochs."""

    epoch: list = field(default_factory=list)
    train: list = field(default_factory=list)
    val: list = field(default_factory=list)
    seen: int = 0
    stride: int = 1

    def add(self, epoch: int, train: float, val: float | None) -> None:
        self.seen += 1
        if (self.seen - 1) % self.stride:
            return
        self.epoch.append(epoch)
        self.train.append(train)
        self.val.append(val)
        if len(self.epoch) > MAX_LOSS_POINTS:
            self.epoch, self.train, self.val = self.epoch[::2], self.train[::2], self.val[::2]
            self.stride *= 2

    def copy(self) -> dict:
        return {"epoch": list(self.epoch), "train": list(self.train), "val": list(self.val)}


# ------------------------------------------------------------------ fits
@dataclass
class FitSpec:
    """What ``fit_run`` needs, in a form that can travel to a worker process and to disk.

    The ground truth (closures) does not travel: it is simulated again from ``truth_params``.
    """

    data: object
    method: str
    dataset: str | None
    kwargs: dict
    truth: object = None
    truth_params: dict | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "truth": None}

    def ground_truth(self):
        if self.truth is None and self.truth_params is not None:
            from dmlcore.data.registry import load_dataset
            params = dict(self.truth_params)
            self.truth = load_dataset(params.pop("dataset"), **params).truth
        return self.truth

    def run(self, report: Report | None, should_stop: ShouldStop | None) -> Run:
        return fit_run(self.data, self.method, truth=self.ground_truth(), dataset=self.dataset,
                       callback=report, should_stop=should_stop, **self.kwargs)

    @property
    def n(self) -> int:
        return int(len(self.data.table))


def _fit_in_worker(payload: dict) -> Run:
    """Run one fit in a worker process, streaming its progress to the server's channel.

    The run comes back without its data and truth (the server has them) and with its curve
    computed, so that the server only draws it.
    """
    _die_with_parent(payload["server"])
    spec: FitSpec = payload["fit"]
    with Link(payload["channel"], payload["job"]) as link, threadpool_limits(limits=1, user_api="openmp"):
        run = spec.run(link.report, link.should_stop)
    try:
        run.curve()
    except DMLCoreError:
        pass
    run.data = run.truth = None
    return run


# ------------------------------------------------------------------ cost estimates
# Rough seconds per 1,000 rows of one nuisance fit, used until a fit of the kind has been timed.
_FIRST_GUESS = {"gb": 1.0, "rf": 1.0, "nn": 6.0, "linear": 0.05}


def cost_key(method: str, config: dict) -> tuple:
    """What a fit's cost depends on besides its rows: the method and (DML-CMR family) its budget."""
    if method not in METHODS or not METHODS[method].second_stage:
        return (method,)
    return (method, config.get("learner") or "nn", config.get("folds") if method == "dml-cmr" else None,
            config.get("epochs"), config.get("n_draws") or 8, config.get("f_model"),
            config.get("reps_crossfit") or 1)


class CostBook:
    """Estimated seconds of a fit, from fits of the same kind timed before (scaled by rows).

    ``rows``: earlier fits as ``{"method", "n", "seconds", **config}`` (config as in a run record).
    """

    def __init__(self, rows=()):
        self._seen: dict[tuple, tuple[int, float]] = {}
        for row in rows:
            try:
                self.observe(cost_key(row["method"], row), int(row["n"]), float(row["seconds"]))
            except (KeyError, TypeError, ValueError):
                continue

    def observe(self, key: tuple, n: int, seconds: float) -> None:
        if key in self._seen:
            old_n, old = self._seen[key]
            seconds = 0.5 * seconds + 0.5 * old * n / max(old_n, 1)
        self._seen[key] = (n, seconds)

    def estimate(self, key: tuple, n: int) -> float:
        if key in self._seen:
            seen_n, seconds = self._seen[key]
            return max(0.05, seconds * n / max(seen_n, 1))
        method, learner, folds, *_ = key + (None,) * 3
        if method not in METHODS or not METHODS[method].second_stage:
            return 0.5
        fits = folds or 1
        return 1.0 + (fits + 1) * _FIRST_GUESS.get(learner, 6.0) * n / 1000


def _key(spec: FitSpec) -> tuple:
    return cost_key(spec.method, spec.kwargs)


def _fits(spec: FitSpec) -> int:
    """Fits the job makes (bootstrap and held-out refits too): its cost is this many of one fit's."""
    return fits_in_run(spec.kwargs, spec.truth is not None or spec.truth_params is not None)


# ------------------------------------------------------------------ the queue
class FairQueue:
    """Deficit round robin over owners, by estimated seconds of compute.

    Owners take turns in the order they queued; a turn lets the owner start fits worth up to
    ``quantum`` seconds (credit left over carries to its next turn while it keeps a queue). A
    demo batch (a few fits, well under a quantum) therefore runs as one piece and each user's
    demo finishes as soon as its own fits are done, in the order of the clicks, while a long
    batch starts one quantum's worth of fits and then lets everyone else have a turn. Jobs of
    unknown cost count one quantum: plain round robin, one job per turn.
    """

    def __init__(self, quantum: float = QUANTUM):
        if quantum <= 0:
            raise ValueError(f"quantum must be positive; got {quantum}.")
        self.quantum = quantum
        self.queues: dict[str, deque] = {}
        self.turns: deque[str] = deque()
        self.credit: dict[str, float] = {}
        self.credited: str | None = None   # the owner at the head that got this turn's quantum

    def __bool__(self) -> bool:
        return bool(self.turns)

    def push(self, job) -> None:
        if job.owner not in self.queues:
            self.queues[job.owner] = deque()
            self.turns.append(job.owner)
            self.credit[job.owner] = 0.0
        self.queues[job.owner].append(job)

    def remove(self, job) -> None:
        queue = self.queues[job.owner]
        queue.remove(job)
        if not queue:
            self._drop(job.owner)

    def pop(self):
        """The next job to start; the queue must not be empty."""
        while True:
            owner = self.turns[0]
            if self.credited != owner:
                self.credit[owner] += self.quantum
                self.credited = owner
            queue = self.queues[owner]
            if queue[0].cost <= self.credit[owner]:
                job = queue.popleft()
                self.credit[owner] -= job.cost
                if not queue:
                    self._drop(owner)
                return job
            self.turns.rotate(-1)
            self.credited = None

    def order(self) -> list:
        """Every queued job in the order it would start (the queue is left as it is)."""
        twin = FairQueue(self.quantum)
        twin.queues = {owner: deque(queue) for owner, queue in self.queues.items()}
        twin.turns, twin.credit, twin.credited = deque(self.turns), dict(self.credit), self.credited
        out = []
        while twin:
            out.append(twin.pop())
        return out

    def _drop(self, owner: str) -> None:
        del self.queues[owner], self.credit[owner]
        self.turns.remove(owner)
        if self.credited == owner:
            self.credited = None


# ------------------------------------------------------------------ progress channel
class Channel:
    """A local socket on which worker processes report a job's progress and hear of its cancel.

    ``ticket`` (address, key) travels with each fit; a worker opens a :class:`Link` with it.
    Only holders of the random key can connect.
    """

    def __init__(self, registry: JobRegistry, host: str = "127.0.0.1"):
        key = secrets.token_bytes(32)
        self._listener = Listener((host, 0), authkey=key)
        self.ticket = (self._listener.address, key)
        self._registry = registry
        self._closed = False
        threading.Thread(target=self._accept, name="dmlcore-channel", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn = self._listener.accept()
            except Exception:   # a client that failed the key check, or the listener closed
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn) -> None:
        job_id = None
        try:
            job_id = conn.recv()
            self._registry._attach(job_id, conn)
            while True:
                self._registry._report_many(job_id, conn.recv())
        except (EOFError, OSError):
            pass
        finally:
            if job_id is not None:
                self._registry._detach(job_id, conn)
            conn.close()

    def close(self) -> None:
        self._closed = True
        self._listener.close()


class Link:
    """A worker's end of the channel: ``report`` batches events, ``should_stop`` reads a cancel.

    Without a server to report to (it could not be reached) the fit runs without progress; a
    link that breaks mid-fit stops the fit (nobody is left to take its result).
    """

    def __init__(self, ticket, job_id: str):
        self._conn, self._buffer, self._sent, self.stopped = None, [], 0.0, False
        try:
            address, key = ticket
            self._conn = Client(address, authkey=key)
            self._conn.send(job_id)
        except Exception:
            logger.warning("Job %s cannot reach the server's progress channel; no live progress", job_id)
            self._conn = None

    def __enter__(self) -> Link:
        return self

    def __exit__(self, *exc) -> None:
        self.flush()
        if self._conn is not None:
            self._conn.close()

    def report(self, event: dict) -> None:
        self._buffer.append(event)
        if event.get("type") == "stage" or time.monotonic() - self._sent > FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self._conn is not None and self._buffer:
            try:
                self._conn.send(self._buffer)
            except OSError:
                self._conn, self.stopped = None, True
        self._buffer, self._sent = [], time.monotonic()

    def should_stop(self) -> bool:
        try:
            while not self.stopped and self._conn is not None and self._conn.poll():
                self.stopped = self._conn.recv() == "stop"
        except (EOFError, OSError):
            self._conn, self.stopped = None, True
        return self.stopped


# ------------------------------------------------------------------ the job file
class JobFile:
    """The queue on disk (SQLite), so that a restarted server finds it."""

    SCHEMA = """CREATE TABLE IF NOT EXISTS jobs (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, label TEXT NOT NULL, seq INTEGER NOT NULL,
        created REAL NOT NULL, status TEXT NOT NULL, cost REAL, attempts INTEGER NOT NULL DEFAULT 0,
        run_id TEXT, error TEXT, started REAL, finished REAL, spec BLOB)"""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(self.SCHEMA)

    def _connect(self):
        conn = sqlite3.connect(self.path, timeout=30)
        conn.row_factory = sqlite3.Row
        return closing(conn)

    def _write(self, sql: str, params) -> None:
        with self._connect() as conn, conn:
            conn.execute(sql, params)

    def add(self, job: _Job) -> None:
        self._write("INSERT OR REPLACE INTO jobs (id, owner, label, seq, created, status, cost, attempts, "
                    "spec) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (job.id, job.owner, job.label, job.seq, job.created, job.status, job.cost,
                     job.attempts, pickle.dumps(job.fit)))

    def update(self, job: _Job) -> None:
        spec = "spec = NULL, " if job.status in ENDED else ""
        self._write(f"UPDATE jobs SET {spec}status = ?, attempts = ?, run_id = ?, error = ?, started = ?, "
                    f"finished = ? WHERE id = ?",
                    (job.status, job.attempts, job.run_id, job.error, job.started, job.finished, job.id))

    def delete(self, ids) -> None:
        with self._connect() as conn, conn:
            conn.executemany("DELETE FROM jobs WHERE id = ?", [(i,) for i in ids])

    def rows(self) -> list[sqlite3.Row]:
        with self._connect() as conn:
            return list(conn.execute("SELECT * FROM jobs ORDER BY seq"))


# ------------------------------------------------------------------ jobs
@dataclass
class _Job:
    """Mutable job state; only touched under the registry's lock."""

    id: str
    owner: str
    label: str
    task: Task | None
    created: float
    seq: int
    cost: float
    fit: FitSpec | None = None
    attempts: int = 0
    restored: bool = False
    kept: bool = False            # in the job file
    call: tuple | None = None     # (fn, item) of a call job
    group: str | None = None
    result: object = None
    status: str = "queued"
    progress: float = 0.0
    stage: str = ""
    fold: int | None = None
    losses: dict = field(default_factory=dict)
    error: str | None = None
    run: Run | None = None
    run_id: str | None = None
    started: float | None = None
    finished: float | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    conn: object = None

    def snapshot(self, plan: tuple | None = None, left: float | None = None) -> JobSnapshot:
        losses = {model: {fold: series.copy() for fold, series in folds.items()}
                  for model, folds in self.losses.items()}
        position, starts_in, ends_in = plan if plan is not None else (None, None, left)
        return JobSnapshot(self.id, self.owner, self.label, self.status, self.progress, self.stage,
                           self.fold, losses, self.error, self.run, self.run_id, self.created,
                           self.started, self.finished, self.stop.is_set(), self.cost, position,
                           starts_in, ends_in, self.restored, self.group, self.result)

    def apply(self, event: dict) -> None:
        """Fold one progress event into the job's state."""
        self.progress = max(self.progress, min(1.0, float(event.get("progress", self.progress))))
        self.fold = event.get("fold", self.fold)
        if event.get("type") == "stage":
            self.stage = str(event["stage"])
        elif event.get("type") == "loss":
            series = self.losses.setdefault(event["model"], {}).setdefault(event["fold"], _LossSeries())
            series.add(int(event["epoch"]), float(event["train"]), event.get("val"))

    def seconds_left(self, now: float) -> float:
        """Estimated seconds until a running job ends: from its progress once it has some (or once
        the job has outlived its estimate), else the estimate less the time spent. A job past its
        estimate without progress is given as long again: never a fixed remainder that stays put."""
        elapsed = now - (self.started or now)
        if self.progress >= 0.15 or (elapsed >= self.cost and self.progress > 0):
            return max(0.0, elapsed * (1 - self.progress) / self.progress)
        return self.cost - elapsed if elapsed < self.cost else elapsed


class JobRegistry:
    """Jobs of all owners of one server, started in a fair order by a few dispatcher threads."""

    def __init__(self, workers: int = 1, store: RunStore | None = None, *, executor=None,
                 job_file: str | os.PathLike | None = None, quantum: float = QUANTUM,
                 channel_host: str = "127.0.0.1", max_pending_per_owner: int = 20,
                 max_finished_per_owner: int = 20, timings=()):
        if workers < 1:
            raise ValueError(f"workers must be at least 1; got {workers}.")
        self.store = store
        self.workers = workers
        self.max_pending_per_owner = max_pending_per_owner
        self.max_finished_per_owner = max_finished_per_owner
        self._executor = executor
        self._costs = CostBook(timings)
        self._lock = threading.Condition()
        self._jobs: dict[str, _Job] = {}
        self._queue = FairQueue(quantum)
        self._seq = 0
        self._closed = False
        self._version = 0
        self._plan: tuple[int, float, dict] = (-1, 0.0, {})
        self._file = JobFile(job_file) if job_file is not None else None
        self._channel = Channel(self, channel_host) if executor is not None else None
        if self._file is not None:
            self._restore()
        self._threads = [threading.Thread(target=self._work, name=f"dmlcore-job-{i}", daemon=True)
                         for i in range(workers)]
        threading.Thread(target=self._start, name="dmlcore-job-start", daemon=True).start()

    def _start(self) -> None:
        """Start the dispatchers; with an executor, once its workers have imported what fits need
        (jobs queue meanwhile), so that the first fits do not wait for torch to load."""
        if self._executor is not None:
            try:
                for _ in self._executor.map(_warm_up, [os.getpid()] * self.workers):
                    pass
            except Exception:
                logger.exception("Warming up the worker processes failed")
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------ submitting
    def submit(self, owner: str, label: str, task: Task, *, cost: float | None = None) -> str:
        """Queue ``task(report, should_stop)`` for ``owner`` (run in this process); returns the job id."""
        if not callable(task):
            raise TypeError(f"task must be callable; got {type(task).__name__}.")
        return self._add(owner, label, task, None, self._queue.quantum if cost is None else float(cost))

    def submit_fit(self, owner: str, label: str, *, data, method: str, truth=None, dataset: str | None = None,
                   **fit_kwargs) -> str:
        """Queue ``fit_run(data, method, truth=truth, dataset=dataset, **fit_kwargs)``."""
        get_method(method)
        inspect.signature(fit_run).bind(data, method, truth=truth, dataset=dataset, callback=None,
                                        should_stop=None, **fit_kwargs)
        params = fit_kwargs.get("data_params") or {}
        recipe = None
        if truth is not None and params and (params.get("dataset") or dataset):
            recipe = {"dataset": dataset, **params}
        elif truth is not None and (self._executor is not None or self._file is not None):
            raise DMLCoreError("A fit scored against a ground truth outside this process needs the data "
                               "set's parameters: pass data_params (as load_dataset returns them).")
        spec = FitSpec(data, method, dataset, dict(fit_kwargs), truth, recipe)
        return self._add(owner, label, None, spec, self._costs.estimate(_key(spec), spec.n) * _fits(spec))

    def submit_call(self, owner: str, label: str, fn: Callable, item, *, cost: float | None = None,
                    group: str | None = None) -> str:
        """Queue ``fn(item)`` (in a worker process when there is an executor: ``fn`` top-level, both
        picklable); its return value becomes the job's ``result``. Not kept across restarts, not
        counted in the owner's limit of pending jobs (the caller bounds how many it queues)."""
        if not callable(fn):
            raise TypeError(f"fn must be callable; got {type(fn).__name__}.")
        return self._add(owner, label, None, None, self._queue.quantum if cost is None else float(cost),
                         call=(fn, item), group=group)

    def estimate(self, method: str, config: dict, n: int) -> float:
        """Estimated seconds of a fit of ``method`` with ``config`` (learner, folds, ...) on ``n`` rows."""
        return self._costs.estimate(cost_key(method, config), n)

    def _add(self, owner: str, label: str, task: Task | None, spec: FitSpec | None, cost: float, *,
             call: tuple | None = None, group: str | None = None) -> str:
        if not isinstance(owner, str) or not owner:
            raise ValueError(f"owner must be a non-empty string; got {owner!r}.")
        with self._lock:
            if self._closed:
                raise RuntimeError("This JobRegistry is closed.")
            pending = sum(job.status not in ENDED and job.call is None for job in self._owned(owner))
            if call is None and pending >= self.max_pending_per_owner:
                raise DMLCoreError(f"You already have {pending} runs queued or running; wait for one "
                                   f"to finish or cancel one.")
            self._seq += 1
            job = _Job(uuid.uuid4().hex, owner, str(label), task, time.time(), self._seq, cost, fit=spec,
                       call=call, group=group)
            if spec is not None and self._file is not None:
                self._file.add(job)
                job.kept = True
            self._jobs[job.id] = job
            self._queue.push(job)
            self._changed()
            return job.id

    # ---------------------------------------------------------------- reading
    def get(self, job_id: str, owner: str) -> JobSnapshot | None:
        """The job's snapshot; None when unknown or owned by someone else."""
        with self._lock:
            job = self._find(job_id, owner)
            return self._snapshot(job) if job else None

    def list(self, owner: str) -> list[JobSnapshot]:
        """The owner's jobs, newest first."""
        with self._lock:
            return [self._snapshot(job) for job in sorted(self._owned(owner), key=lambda j: -j.seq)]

    def wait(self, job_id: str, owner: str, timeout: float | None = None) -> JobSnapshot | None:
        """Block until the job has ended or ``timeout`` seconds passed; then its snapshot."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while (job := self._find(job_id, owner)) is not None and job.status not in ENDED:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._lock.wait(left)
            return self._snapshot(job) if job else None

    def wait_any(self, job_ids, owner: str, timeout: float | None = None) -> str | None:
        """Block until one of the owner's jobs ``job_ids`` has ended; its id (None: timeout, or none
        of them is known)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                jobs = [job for job_id in job_ids if (job := self._find(job_id, owner)) is not None]
                ended = next((job.id for job in jobs if job.status in ENDED), None)
                left = None if deadline is None else deadline - time.monotonic()
                if ended is not None or not jobs or (left is not None and left <= 0):
                    return ended
                self._lock.wait(left)

    # ------------------------------------------------------------- cancelling
    def cancel(self, job_id: str, owner: str) -> bool:
        """Cancel a queued job now, or ask a running one to stop; False if there is nothing to cancel."""
        with self._lock:
            job = self._find(job_id, owner)
            if job is None or job.status in ENDED:
                return False
            job.stop.set()
            if job.status == "queued":
                self._queue.remove(job)
                self._end(job, "cancelled")
            elif job.conn is not None:
                _send_stop(job.conn)
            return True

    def dismiss(self, job_ids, owner: str) -> int:
        """Forget the owner's ended jobs among ``job_ids``; how many were forgotten."""
        with self._lock:
            gone = [job.id for job_id in job_ids if (job := self._find(job_id, owner)) and job.status in ENDED]
            for job_id in gone:
                del self._jobs[job_id]
            if gone and self._file is not None:
                self._file.delete(gone)
            return len(gone)

    def close(self) -> None:
        """Start nothing more and ask running fits to stop; queued jobs stay in the job file."""
        with self._lock:
            self._closed = True
            for job in self._jobs.values():
                if job.status == "running":
                    job.stop.set()
                    if job.conn is not None:
                        _send_stop(job.conn)
            self._lock.notify_all()
        if self._channel is not None:
            self._channel.close()
        if self._executor is not None:
            self._executor.close()

    # ---------------------------------------------------------------- workers
    def _work(self) -> None:
        while (job := self._next_job()) is not None:
            self._run(job)

    def _next_job(self) -> _Job | None:
        """The next job in the fair order, marked running; None once closed."""
        with self._lock:
            while not self._queue and not self._closed:
                self._lock.wait()
            if self._closed:
                return None
            job = self._queue.pop()
            job.status, job.started = "running", time.time()
            if job.kept:
                self._file.update(job)
            self._changed()
            return job

    def _run(self, job: _Job) -> None:
        if _exiting():
            return
        try:
            if job.call is not None:
                run = self._call(job)
            elif job.fit is not None and self._executor is not None:
                run = self._run_remote(job)
            else:
                # torch and scikit-learn each bring an OpenMP runtime; outside the main thread,
                # gradient boosting with two OpenMP threads ran ~5x slower here than with one
                with threadpool_limits(limits=1, user_api="openmp"):
                    report = lambda event: self._report_many(job.id, [event])  # noqa: E731
                    task = job.fit.run if job.fit is not None else job.task
                    run = task(report, job.stop.is_set)
        except FitCancelled:
            self._finish(job, "cancelled")
        except (DMLCoreError, FitDiverged) as exc:
            self._finish(job, "failed", error=str(exc))
        except Exception as exc:
            if _exiting():      # the server stops (its executor first): the job file keeps the job
                return
            logger.error("Job %s (%r) of owner %s failed", job.id, job.label, job.owner, exc_info=exc)
            self._finish(job, "failed", error=_unexpected(exc))
        else:
            if job.call is not None:
                self._finish(job, "done", result=run)
                return
            if job.fit is not None:
                self._costs.observe(_key(job.fit), job.fit.n, (time.time() - job.started) / _fits(job.fit))
            run_id, error = self._save(job, run)
            self._finish(job, "done", error=error, run=run, run_id=run_id)

    def _call(self, job: _Job):
        """Run a call job: in a worker process when there is an executor; its result or exception."""
        fn, item = job.call
        if self._executor is None:
            result = fn(item)
        else:
            for _, result in self._executor.map(fn, [item], resources={"num_cpus": 1}):
                pass
        if isinstance(result, BaseException):
            raise result
        if job.stop.is_set():
            raise FitCancelled("The job was cancelled.")
        return result

    def _run_remote(self, job: _Job) -> Run:
        """Send the fit to the executor and wait for its run (progress arrives on the channel)."""
        payload = {"job": job.id, "channel": self._channel.ticket, "fit": job.fit, "server": os.getpid()}
        for _, result in self._executor.map(_fit_in_worker, [payload], resources={"num_cpus": 1}):
            pass
        if isinstance(result, BaseException):
            raise result
        if job.stop.is_set():
            raise FitCancelled("The fit was cancelled.")
        result.data, result.truth = job.fit.data, job.fit.truth
        return result

    def _attach(self, job_id: str, conn) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.status in ENDED:
                _send_stop(conn)
                return
            job.conn = conn
            if job.stop.is_set():
                _send_stop(conn)

    def _detach(self, job_id: str, conn) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and job.conn is conn:
                job.conn = None

    def _report_many(self, job_id: str, events: list[dict]) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and job.status == "running":
                for event in events:
                    job.apply(event)

    def _save(self, job: _Job, run: Run) -> tuple[str | None, str | None]:
        """Save the run to the store when there is one: (run id, error message)."""
        if self.store is None:
            return None, None
        try:
            return self.store.save(run, job.owner, job.label), None
        except Exception as exc:
            logger.exception("Saving the run of job %s failed", job.id)
            return None, f"The run finished but could not be saved: {_unexpected(exc)}"

    def _finish(self, job: _Job, status: str, *, error: str | None = None, run: Run | None = None,
                run_id: str | None = None, result=None) -> None:
        with self._lock:
            job.error, job.run, job.run_id, job.result = error, run, run_id, result
            if status == "done":
                job.progress = 1.0
            self._end(job, status)

    # ------------------------------------------------------------- restarts
    def _restore(self) -> None:
        """Take up the jobs of the job file: queue again what was waiting or running."""
        for row in self._file.rows():
            self._seq = max(self._seq, row["seq"])
            job = _Job(row["id"], row["owner"], row["label"], None, row["created"], row["seq"],
                       row["cost"] or self._queue.quantum, attempts=row["attempts"], status=row["status"],
                       error=row["error"], run_id=row["run_id"], started=row["started"],
                       finished=row["finished"], restored=True, kept=True)
            if job.status == "running":
                job.attempts += 1
            if job.status in ("queued", "running"):
                job.started = None
                try:
                    job.fit = pickle.loads(row["spec"])
                except Exception as exc:
                    job.status, job.finished = "failed", time.time()
                    job.error = (f"Lost in a server restart: this run was queued but could not be restored "
                                 f"({_unexpected(exc)}). Start it again.")
                else:
                    if job.attempts > MAX_ATTEMPTS:
                        job.status, job.finished = "failed", time.time()
                        job.error = (f"Lost: this run was interrupted by {job.attempts} server restarts "
                                     f"while it trained. Start it again.")
                    else:
                        job.status = "queued"
                        self._queue.push(job)
                self._file.update(job)
            elif job.status == "done":
                job.progress = 1.0
            self._jobs[job.id] = job

    # ------------------------------------------------- helpers (lock held)
    def _find(self, job_id: str, owner: str) -> _Job | None:
        job = self._jobs.get(job_id)
        return job if job is not None and job.owner == owner else None

    def _owned(self, owner: str) -> list[_Job]:
        return [job for job in self._jobs.values() if job.owner == owner]

    def _changed(self) -> None:
        self._version += 1
        self._lock.notify_all()

    def _snapshot(self, job: _Job) -> JobSnapshot:
        if job.status == "queued":
            return job.snapshot(self._queue_plan().get(job.id))
        if job.status == "running":
            return job.snapshot(left=job.seconds_left(time.time()))
        return job.snapshot()

    def _queue_plan(self) -> dict[str, tuple[int, float, float]]:
        """Each queued job's (position, seconds until it starts, seconds until it ends)."""
        version, stamp, plan = self._plan
        now = time.time()
        if version == self._version and now - stamp < PLAN_SECONDS:
            return plan
        free = [job.seconds_left(now) for job in self._jobs.values() if job.status == "running"]
        free = sorted(free)[:self.workers] + [0.0] * max(0, self.workers - len(free))
        heapq.heapify(free)
        plan = {}
        for position, job in enumerate(self._queue.order(), start=1):
            start = heapq.heappop(free)
            heapq.heappush(free, start + job.cost)
            plan[job.id] = (position, start, start + job.cost)
        self._plan = (self._version, now, plan)
        return plan

    def _end(self, job: _Job, status: str) -> None:
        job.status, job.finished, job.task, job.conn, job.call = status, time.time(), None, None, None
        if job.kept and not self._closed:
            self._file.update(job)
        job.fit = None
        self._forget_old(job.owner)
        self._changed()

    def _forget_old(self, owner: str) -> None:
        """Keep only the owner's ``max_finished_per_owner`` newest ended jobs (of no group: the
        caller of grouped jobs dismisses them)."""
        ended = sorted((job for job in self._owned(owner) if job.status in ENDED and job.group is None),
                       key=lambda j: -j.seq)
        old = [job.id for job in ended[self.max_finished_per_owner:]]
        for job_id in old:
            del self._jobs[job_id]
        if old and self._file is not None:
            self._file.delete(old)


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
        from dmlcore.studies.executors import get_executor
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


def _warm_up(server: int) -> None:
    """Import what a fit needs, so that the first fit in a new worker process does not wait for it."""
    _die_with_parent(server)
    import dmlcore.estimators.dml  # noqa: F401


_watching = threading.Event()


def _die_with_parent(server: int) -> None:
    """In a worker process (not the server's own): exit once the process that started it has died,
    so that a killed server leaves no idle workers holding memory."""
    if os.getpid() == server or _watching.is_set():
        return
    _watching.set()
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="dmlcore-parent-watch", daemon=True).start()


def _env_number(name: str, default, kind, minimum):
    raw = os.environ.get(name)
    try:
        value = kind(raw) if raw else default
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise DMLCoreError(f"{name}={raw!r} is not valid; give a number of at least {minimum}.")
    return value


def _exiting() -> bool:
    """Whether this process is stopping: its exit handlers (which shut executors down) run, or
    its main thread has ended, while daemon threads linger."""
    return getattr(threading, "_SHUTTING_DOWN", False) or not threading.main_thread().is_alive()


def _send_stop(conn) -> None:
    try:
        conn.send("stop")
    except OSError:
        pass


def _unexpected(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    return f"unexpected {type(exc).__name__}: {message}" if message else f"unexpected {type(exc).__name__}"
