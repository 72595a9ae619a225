"""Background fits for one server: a fair queue, live progress, cancellation, worker processes.

Modules: :mod:`~dmlcore.jobs.registry` (the registry and its dispatcher threads),
:mod:`~dmlcore.jobs.queue` (the fair order), :mod:`~dmlcore.jobs.costs` (estimated seconds),
:mod:`~dmlcore.jobs.channel` (progress and cancels over a local socket),
:mod:`~dmlcore.jobs.jobfile` (the queue on disk), :mod:`~dmlcore.jobs.worker` (what runs in a
worker process), :mod:`~dmlcore.jobs.snapshot` (a job's state), :mod:`~dmlcore.jobs.server`
(the dashboard server's registry from the environment).

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
  result_or_exception)`` and ``close()`` (``dmlcore.executors.get_executor``), with at
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
  ``result``. For studies (dmlcore.jobs.study_jobs): not kept across restarts, no pending limit.
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

from dmlcore.jobs.channel import Channel, Link
from dmlcore.jobs.costs import CostBook, cost_key
from dmlcore.jobs.jobfile import JobFile
from dmlcore.jobs.queue import QUANTUM, FairQueue
from dmlcore.jobs.registry import MAX_ATTEMPTS, JobRegistry
from dmlcore.jobs.server import server_registry
from dmlcore.jobs.snapshot import ENDED, MAX_LOSS_POINTS, JobSnapshot
from dmlcore.jobs.worker import FitSpec

__all__ = ["ENDED", "MAX_ATTEMPTS", "MAX_LOSS_POINTS", "QUANTUM", "Channel", "CostBook", "FairQueue", "FitSpec",
           "JobFile", "JobRegistry", "JobSnapshot", "Link", "cost_key", "server_registry"]
