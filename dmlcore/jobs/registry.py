"""The registry of one server's jobs: submitting, the dispatcher threads, cancels, restarts
(the package docstring, :mod:`dmlcore.jobs`, is its API)."""

from __future__ import annotations

import heapq
import inspect
import logging
import os
import pickle
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.estimators import FitSettings, get_method, refuse_unread
from dmlcore.jobs.channel import Channel, send_stop
from dmlcore.jobs.costs import CostBook, cost_key
from dmlcore.jobs.jobfile import JobFile
from dmlcore.jobs.queue import QUANTUM, FairQueue
from dmlcore.jobs.snapshot import ENDED, JobSnapshot, LossSeries
from dmlcore.jobs.worker import FitSpec, Report, ShouldStop, fit_in_worker, warm_up
from dmlcore.process import one_openmp_thread
from dmlcore.runs import Run, fit_run, fits_in_run
from dmlcore.store import RunStore

logger = logging.getLogger("dmlcore.jobs")

Task = Callable[[Report, ShouldStop], Run]

MAX_ATTEMPTS = 2        # restarts a running fit survives before it is given up
PLAN_SECONDS = 1.0      # queue estimates are recomputed at most this often when nothing changed


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
            series = self.losses.setdefault(event["model"], {}).setdefault(event["fold"], LossSeries())
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
                for _ in self._executor.map(warm_up, [os.getpid()] * self.workers):
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
        """Queue ``fit_run(data, method, truth=truth, dataset=dataset, **fit_kwargs)``; an unknown setting, or one
        ``method`` does not read, is refused at once."""
        get_method(method)
        inspect.signature(fit_run).bind(data, method, truth=truth, dataset=dataset, callback=None,
                                        should_stop=None, **fit_kwargs)
        refuse_unread(FitSettings.of(**{k: v for k, v in fit_kwargs.items() if k != "data_params"}), method)
        params = fit_kwargs.get("data_params") or {}
        recipe = None
        if truth is not None and params and (params.get("dataset") or dataset):
            recipe = {"dataset": dataset, **params}
        elif truth is not None and (self._executor is not None or self._file is not None):
            raise DMLCoreError("A fit scored against a ground truth outside this process needs the data "
                               "set's parameters: pass data_params (as load_dataset returns them).")
        spec = FitSpec(data, method, dataset, dict(fit_kwargs), truth, recipe)
        return self._add(owner, label, None, spec,
                         self._costs.estimate(cost_key(spec.method, spec.kwargs), spec.n) * _fits(spec))

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
                send_stop(job.conn)
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
                        send_stop(job.conn)
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
                with one_openmp_thread():   # a dispatcher thread (dmlcore.process)
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
                self._costs.observe(cost_key(job.fit.method, job.fit.kwargs), job.fit.n,
                                    (time.time() - job.started) / _fits(job.fit))
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
        for _, result in self._executor.map(fit_in_worker, [payload], resources={"num_cpus": 1}):
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
                send_stop(conn)
                return
            job.conn = conn
            if job.stop.is_set():
                send_stop(conn)

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


def _fits(spec: FitSpec) -> int:
    """Fits the job makes (bootstrap and held-out refits too): its cost is this many of one fit's."""
    return fits_in_run(spec.kwargs, spec.truth is not None or spec.truth_params is not None, spec.method)


def _exiting() -> bool:
    """Whether this process is stopping: its exit handlers (which shut executors down) run, or
    its main thread has ended, while daemon threads linger."""
    return getattr(threading, "_SHUTTING_DOWN", False) or not threading.main_thread().is_alive()


def _unexpected(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    return f"unexpected {type(exc).__name__}: {message}" if message else f"unexpected {type(exc).__name__}"
