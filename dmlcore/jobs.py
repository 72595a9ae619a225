"""Background fits for one server process: a fair job queue, live progress, cancellation.

The dashboard creates one registry per process (``st.cache_resource``); this module never imports
Streamlit. Workers are daemon threads; jobs are served round-robin across owners (an owner is a
browser session token), so one user's queue of runs never starves another user.

Public API
----------
``JobRegistry(workers: int = 1, store: RunStore | None = None, *, max_pending_per_owner: int = 20,
max_finished_per_owner: int = 20)``

* ``submit(owner: str, label: str, task) -> str`` -- queue ``task(report, should_stop) -> Run``;
  returns the job id (uuid4 hex). ``report(event)`` takes the event dicts of
  :mod:`dmlcore.progress`; ``should_stop()`` turns True once the job is cancelled. Raises
  DMLCoreError when the owner already has ``max_pending_per_owner`` jobs queued or running.
* ``submit_fit(owner, label, *, data, method, truth=None, dataset=None, **fit_kwargs) -> str`` --
  a job running ``dmlcore.runs.fit_run(data, method, truth=..., dataset=..., **fit_kwargs)``; the
  estimator's ``notes_`` (2SLS: constant columns it left out) are copied to ``run.record["notes"]``.
  An unknown method raises DMLCoreError and a bad keyword TypeError at once, not in the worker.
* ``get(job_id: str, owner: str) -> JobSnapshot | None`` -- None for an unknown id, another
  owner's job, or a finished job dropped from memory (see below; its run stays in the store).
* ``list(owner: str) -> list[JobSnapshot]`` -- the owner's jobs, newest first.
* ``cancel(job_id: str, owner: str) -> bool`` -- a queued job becomes "cancelled" at once and never
  starts; a running job gets ``cancel_requested`` and becomes "cancelled" when the fit next checks
  (between epochs). False when there is nothing to cancel.
* ``wait(job_id: str, owner: str, timeout: float | None = None) -> JobSnapshot | None`` -- block until
  the job has ended (or the timeout passed); for tests and scripts.
* ``close()`` -- cancel every job and stop the workers once their current job has ended.

``JobSnapshot`` (frozen dataclass, a copy: safe to read from any thread):
``id``, ``owner``, ``label``, ``status`` ("queued", "running", "done", "failed", "cancelled"),
``progress`` (0..1), ``stage`` (str, "" before the first stage), ``fold`` (int | None),
``losses`` ({"s"|"g"|"f": {fold (int | None): {"epoch": [...], "train": [...], "val": [...]}}},
each series thinned to at most ``MAX_LOSS_POINTS`` evenly spaced epochs), ``error`` (one-line
message or None), ``run`` (the Run when done), ``run_id`` (the store's id when saved),
``created`` / ``started`` / ``finished`` (``time.time()`` seconds or None), ``cancel_requested``
(bool); properties ``active`` (queued or running) and ``ended``.

Errors: DMLCoreError and FitDiverged messages are kept as they are; any other exception becomes
"unexpected <Type>: <message>" with its traceback logged (logger ``dmlcore.jobs``). A job that
raises never stops its worker. A done job may carry an ``error`` when saving to the store failed
(its ``run`` is still there, ``run_id`` is None).

Memory: each owner keeps its ``max_finished_per_owner`` newest ended jobs (with their Run); older
ones are dropped, so keep ``run_id`` to read a finished run back from the store.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from threadpoolctl import threadpool_limits

from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.runs import METHODS, Run, fit_run
from dmlcore.store import RunStore

logger = logging.getLogger(__name__)

Report = Callable[[dict], None]
ShouldStop = Callable[[], bool]
Task = Callable[[Report, ShouldStop], Run]

ENDED = ("done", "failed", "cancelled")
MAX_LOSS_POINTS = 400


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


@dataclass
class _Job:
    """Mutable job state; only touched under the registry's lock."""

    id: str
    owner: str
    label: str
    task: Task
    created: float
    seq: int
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

    def snapshot(self) -> JobSnapshot:
        losses = {model: {fold: series.copy() for fold, series in folds.items()}
                  for model, folds in self.losses.items()}
        return JobSnapshot(self.id, self.owner, self.label, self.status, self.progress, self.stage,
                           self.fold, losses, self.error, self.run, self.run_id, self.created,
                           self.started, self.finished, self.stop.is_set())

    def apply(self, event: dict) -> None:
        """Fold one progress event into the job's state."""
        self.progress = max(self.progress, min(1.0, float(event.get("progress", self.progress))))
        self.fold = event.get("fold", self.fold)
        if event.get("type") == "stage":
            self.stage = str(event["stage"])
        elif event.get("type") == "loss":
            series = self.losses.setdefault(event["model"], {}).setdefault(event["fold"], _LossSeries())
            series.add(int(event["epoch"]), float(event["train"]), event.get("val"))


class JobRegistry:
    """Jobs of all owners of one process, run by a few daemon worker threads."""

    def __init__(self, workers: int = 1, store: RunStore | None = None, *,
                 max_pending_per_owner: int = 20, max_finished_per_owner: int = 20):
        if workers < 1:
            raise ValueError(f"workers must be at least 1; got {workers}.")
        self.store = store
        self.max_pending_per_owner = max_pending_per_owner
        self.max_finished_per_owner = max_finished_per_owner
        self._lock = threading.Condition()
        self._jobs: dict[str, _Job] = {}
        self._queues: dict[str, deque[_Job]] = {}
        self._turns: deque[str] = deque()  # owners with queued jobs, next to be served first
        self._seq = 0
        self._closed = False
        self._workers = [threading.Thread(target=self._work, name=f"dmlcore-job-{i}", daemon=True)
                         for i in range(workers)]
        for worker in self._workers:
            worker.start()

    # ------------------------------------------------------------ submitting
    def submit(self, owner: str, label: str, task: Task) -> str:
        """Queue ``task(report, should_stop)`` for ``owner``; returns the job id."""
        if not isinstance(owner, str) or not owner:
            raise ValueError(f"owner must be a non-empty string; got {owner!r}.")
        if not callable(task):
            raise TypeError(f"task must be callable; got {type(task).__name__}.")
        with self._lock:
            if self._closed:
                raise RuntimeError("This JobRegistry is closed.")
            pending = sum(job.status not in ENDED for job in self._owned(owner))
            if pending >= self.max_pending_per_owner:
                raise DMLCoreError(f"You already have {pending} runs queued or running; wait for one "
                                   f"to finish or cancel one.")
            self._seq += 1
            job = _Job(uuid.uuid4().hex, owner, str(label), task, time.time(), self._seq)
            self._jobs[job.id] = job
            self._enqueue(job)
            self._lock.notify_all()
            return job.id

    def submit_fit(self, owner: str, label: str, *, data, method: str, truth=None, dataset: str | None = None,
                   **fit_kwargs) -> str:
        """Queue ``fit_run(data, method, truth=truth, dataset=dataset, **fit_kwargs)``."""
        if method not in METHODS:
            raise DMLCoreError(f"Unknown method {method!r}; choose one of {', '.join(METHODS)}.")
        inspect.signature(fit_run).bind(data, method, truth=truth, dataset=dataset, callback=None,
                                        should_stop=None, **fit_kwargs)

        def task(report: Report, should_stop: ShouldStop) -> Run:
            run = fit_run(data, method, truth=truth, dataset=dataset, callback=report,
                          should_stop=should_stop, **fit_kwargs)
            _record_notes(run)
            return run

        return self.submit(owner, label, task)

    # ---------------------------------------------------------------- reading
    def get(self, job_id: str, owner: str) -> JobSnapshot | None:
        """The job's snapshot; None when unknown or owned by someone else."""
        with self._lock:
            job = self._find(job_id, owner)
            return job.snapshot() if job else None

    def list(self, owner: str) -> list[JobSnapshot]:
        """The owner's jobs, newest first."""
        with self._lock:
            return [job.snapshot() for job in sorted(self._owned(owner), key=lambda j: -j.seq)]

    def wait(self, job_id: str, owner: str, timeout: float | None = None) -> JobSnapshot | None:
        """Block until the job has ended or ``timeout`` seconds passed; then its snapshot."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while (job := self._find(job_id, owner)) is not None and job.status not in ENDED:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._lock.wait(left)
            return job.snapshot() if job else None

    # ------------------------------------------------------------- cancelling
    def cancel(self, job_id: str, owner: str) -> bool:
        """Cancel a queued job now, or ask a running one to stop; False if there is nothing to cancel."""
        with self._lock:
            job = self._find(job_id, owner)
            if job is None or job.status in ENDED:
                return False
            job.stop.set()
            if job.status == "queued":
                self._dequeue(job)
                self._end(job, "cancelled")
            return True

    def close(self) -> None:
        """Cancel every job and let the workers exit after their current job."""
        with self._lock:
            self._closed = True
            for job in list(self._jobs.values()):
                if job.status == "queued":
                    self._dequeue(job)
                    self._end(job, "cancelled")
                job.stop.set()
            self._lock.notify_all()

    # ---------------------------------------------------------------- workers
    def _work(self) -> None:
        while (job := self._next_job()) is not None:
            self._run(job)

    def _next_job(self) -> _Job | None:
        """The next job in round-robin order across owners, marked running; None once closed."""
        with self._lock:
            while not self._turns and not self._closed:
                self._lock.wait()
            if self._closed:
                return None
            owner = self._turns.popleft()
            queue = self._queues[owner]
            job = queue.popleft()
            if queue:
                self._turns.append(owner)
            else:
                del self._queues[owner]
            job.status, job.started = "running", time.time()
            return job

    def _run(self, job: _Job) -> None:
        try:
            # torch and scikit-learn each bring an OpenMP runtime; outside the main thread,
            # gradient boosting with two OpenMP threads ran ~5x slower here than with one
            with threadpool_limits(limits=1, user_api="openmp"):
                run = job.task(lambda event: self._report(job, event), job.stop.is_set)
        except FitCancelled:
            self._finish(job, "cancelled")
        except (DMLCoreError, FitDiverged) as exc:
            self._finish(job, "failed", error=str(exc))
        except Exception as exc:
            logger.exception("Job %s (%r) of owner %s failed", job.id, job.label, job.owner)
            self._finish(job, "failed", error=_unexpected(exc))
        else:
            run_id, error = self._save(job, run)
            self._finish(job, "done", error=error, run=run, run_id=run_id)

    def _report(self, job: _Job, event: dict) -> None:
        with self._lock:
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
                run_id: str | None = None) -> None:
        with self._lock:
            job.error, job.run, job.run_id = error, run, run_id
            if status == "done":
                job.progress = 1.0
            self._end(job, status)

    # ------------------------------------------------- helpers (lock held)
    def _find(self, job_id: str, owner: str) -> _Job | None:
        job = self._jobs.get(job_id)
        return job if job is not None and job.owner == owner else None

    def _owned(self, owner: str) -> list[_Job]:
        return [job for job in self._jobs.values() if job.owner == owner]

    def _enqueue(self, job: _Job) -> None:
        if job.owner not in self._queues:
            self._queues[job.owner] = deque()
            self._turns.append(job.owner)
        self._queues[job.owner].append(job)

    def _dequeue(self, job: _Job) -> None:
        queue = self._queues[job.owner]
        queue.remove(job)
        if not queue:
            del self._queues[job.owner]
            self._turns.remove(job.owner)

    def _end(self, job: _Job, status: str) -> None:
        job.status, job.finished, job.task = status, time.time(), None
        self._forget_old(job.owner)
        self._lock.notify_all()

    def _forget_old(self, owner: str) -> None:
        """Keep only the owner's ``max_finished_per_owner`` newest ended jobs in memory."""
        ended = sorted((job for job in self._owned(owner) if job.status in ENDED), key=lambda j: -j.seq)
        for job in ended[self.max_finished_per_owner:]:
            del self._jobs[job.id]


def _record_notes(run: Run) -> None:
    """Copy the estimator's ``notes_`` (e.g. 2SLS's dropped constant columns) into the run record.

    So that they are stored with the run and shown by the dashboard; a record that already has
    ``notes`` keeps them.
    """
    notes = [str(note) for note in (getattr(run.estimator, "notes_", None) or [])]
    if notes and isinstance(run.record, dict):
        run.record.setdefault("notes", notes)


def _unexpected(exc: Exception) -> str:
    message = " ".join(str(exc).split())
    return f"unexpected {type(exc).__name__}: {message}" if message else f"unexpected {type(exc).__name__}"
