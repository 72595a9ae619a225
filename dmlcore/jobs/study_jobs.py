"""Studies started from a server (the dashboard's Study page), run in the background.

A study runs :func:`dmlcore.studies.run_study` in a thread of its own, on
:class:`QueueExecutor`: the studies' executor interface over the server's
:class:`~dmlcore.jobs.JobRegistry`, so each fit waits its turn in the same fair queue as
everyone's runs (a few at a time, so a long study yields to others after each quantum) and runs
in the same worker processes or Ray cluster. Fits are stored as they finish; the study is
remembered in the run store from its start (with its status and the server running it), so it
can be reopened. A study still "running" in the store whose server is gone (a restart, a crash)
is continued when the next server starts (``Studies(registry)``): its stored fits count as run by
it and only the missing ones are queued, as queued single runs are taken up again. Starting the
same grid again for the same owner continues that study (the same id) instead of adding another.

``Studies(registry)``:

* ``start(owner, spec, label="") -> StudyState`` -- plan (what is stored, what it should cost)
  and start, or continue the owner's study over the same fits (the running one is returned as it
  is); raises DMLCoreError for a bad spec.
* ``resume_interrupted() -> list[StudyState]`` -- continue the studies whose server is gone
  (called by the constructor unless ``resume=False``).
* ``close()`` -- this server stops driving its studies; those still running stay "running" in the
  store, to be continued by the next server.
* ``get(study_id, owner) -> StudyState | None``; ``latest(owner) -> StudyState | None``.
* ``cancel(study_id, owner) -> bool`` -- queued fits are dropped, running ones finish.

``StudyState``: ``id`` (the store's study id), ``label``, ``spec``, ``status`` ("running", "done",
"cancelled", "failed": the study stopped on an error, or every fit it ran failed), ``total``,
``reused``, ``to_run``, ``ran`` (fits finished or failed, of ``to_run``), ``failed``,
``estimate_seconds`` (compute of the fits to run, from stored timings; None when none is known),
``error``; ``seconds_left()``, ``result()`` (a StudyResult of what has finished so far, None before
any fit; once the study has ended, the one ``run_study`` returned, with the cancelled fits' rows),
``message`` (the counts, as that result's).

``executor_note(registry)`` -- where a server's fits run (local worker processes, a Ray cluster, ...).

``study_files(result, spec) -> bytes`` -- a zip of the study's files (fits.csv, summary.csv,
paired.csv, spec.json, report.html and, when Chromium can draw them, the PNG figures).
"""

from __future__ import annotations

import io
import os
import tempfile
import uuid
import threading
import time
import zipfile
from collections import deque
from dataclasses import dataclass, field

from dmlcore.data.datasets import REAL_DATASETS
from dmlcore.errors import DMLCoreError
from dmlcore.jobs import JobRegistry
from dmlcore.studies import plan_study, run_fit_config, run_study
from dmlcore.studies.report import write_outputs
from dmlcore.studies.checks import check_study
from dmlcore.studies.runner import as_spec, result_from_rows, stored_curves

IN_FLIGHT_PER_WORKER = 2   # fits of one study queued or running at once, per worker
_LIVE: set[str] = set()    # the tokens of this process's Studies that are driving studies


class QueueExecutor:
    """The studies' executor interface (``map``, ``close``) on a JobRegistry's fair queue."""

    kind = "queue"

    def __init__(self, registry: JobRegistry, owner: str, group: str, label: str,
                 stop: threading.Event | None = None):
        self.registry, self.owner, self.group, self.label = registry, owner, group, label
        self.stop = stop or threading.Event()
        self.workers = registry.workers

    def map(self, fn, items, *, resources=None):
        """Queue the items a few at a time; yield ``(index, result or exception)`` as each ends.
        Once ``stop`` is set, nothing more is queued and the cancelled fits are not yielded."""
        waiting, running = deque(range(len(items))), {}
        try:
            while (waiting or running) and not self.stop.is_set():
                while waiting and len(running) < IN_FLIGHT_PER_WORKER * self.workers:
                    index = waiting.popleft()
                    running[self._submit(fn, items[index])] = index
                job_id = self.registry.wait_any(list(running), self.owner)
                if job_id is None:          # the registry lost them (it was closed)
                    raise DMLCoreError("The server stopped taking jobs; run the study again to complete it.")
                snap = self.registry.get(job_id, self.owner)
                self.registry.dismiss([job_id], self.owner)
                index = running.pop(job_id)
                if snap.status != "cancelled":
                    yield index, snap.result if snap.status == "done" else RuntimeError(snap.error or snap.status)
        finally:
            for job_id in running:
                self.registry.cancel(job_id, self.owner)
            self.registry.dismiss(list(running), self.owner)

    def _submit(self, fn, config: dict) -> str:
        label = f"{self.label} · {config['method']} · seed {config['seed']}"
        cost = self.registry.estimate(config["method"], config, _row_count(config))
        return self.registry.submit_call(self.owner, label, fn, config, cost=cost, group=self.group)

    def close(self) -> None:
        """Nothing to release: the registry's workers serve everyone."""


@dataclass
class StudyState:
    """A study started in the background, as it goes."""

    id: str
    owner: str
    label: str
    spec: object
    total: int
    reused: int
    to_run: int
    estimate_seconds: float | None
    workers: int
    earlier: int = 0          # fits of this study run before it was continued (stored, counted as run)
    status: str = "running"
    ran: int = 0
    failed: int = 0
    error: str | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None
    _rows: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _done_seconds: list = field(default_factory=list)
    _order: dict = field(default_factory=dict)     # fit key -> its place in the grid
    _curves: dict = field(default_factory=dict)    # fit key -> its curve
    _final: object = None                          # run_study's result, once the study has ended
    _reused_keys: set | None = None                # keys stored before the study first started

    def result(self):
        """The fits finished so far, in the grid's order (so methods keep their order however the
        fits finish), with their summary and pairs; None without any. Once the study has ended:
        run_study's own result (cancelled fits as rows), so that its counts are those of fits.csv."""
        if self._final is not None:
            return self._final
        with self._lock:
            rows = sorted(self._rows, key=lambda row: self._order.get(row.get("key"), len(self._order)))
            curves = dict(self._curves)
        if not rows:
            return None
        result = result_from_rows(rows)
        result.planned, result.curves, result.study_id = self.total, curves, self.id
        return result

    def seconds_left(self) -> float | None:
        """Time left: the fits still to run at the mean pace of those run so far (or the estimate)."""
        left = self.to_run - self.ran
        if self.status != "running" or left <= 0:
            return 0.0 if self.status != "running" else None
        with self._lock:
            pace = list(self._done_seconds)
        if pace:
            return left * (sum(pace) / len(pace)) / self.workers
        if self.estimate_seconds is None:
            return None
        return self.estimate_seconds * left / max(self.to_run, 1) / self.workers

    @property
    def message(self) -> str:
        """'k of n fits run, m reused' and what failed, was cancelled or is still to run (as StudyResult's)."""
        if self._final is not None:
            return self._final.message
        text = f"{self.earlier + self.ran} of {self.total} fits run, {self.reused} reused"
        if self.failed:
            text += f", {self.failed} failed"
        left = self.to_run - self.ran
        return text + (f", {left} still to run" if left and self.status == "running" else "")

    def _event(self, event: dict) -> None:
        if event.get("event") == "fit":
            row, record = event["row"], event.get("record") or {}
            with self._lock:
                self._rows.append(row)
                if record.get("curve"):
                    self._curves[row["key"]] = record["curve"]
                self.ran = event["done"]
                self.failed += row.get("status") == "failed"
                if row.get("worker_seconds") is not None:
                    self._done_seconds.append(float(row["worker_seconds"]))


class Studies:
    """The studies a server runs in the background, per owner."""

    def __init__(self, registry: JobRegistry, *, resume: bool = True):
        if registry.store is None:
            raise DMLCoreError("Studies keep their fits in the run store; give the registry a store.")
        self.registry = registry
        self._lock = threading.Lock()
        self._studies: dict[str, StudyState] = {}
        self._token = f"{os.getpid()}:{uuid.uuid4().hex}"
        self._closed = False
        _LIVE.add(self._token)
        if resume:
            self.resume_interrupted()

    def start(self, owner: str, spec, label: str = "") -> StudyState:
        """Plan ``spec`` against the store, remember it for ``owner`` and start it; the owner's study over
        the same fits is continued instead (returned as it is while it runs here)."""
        spec = as_spec(spec)
        check_study(spec)
        store = self.registry.store
        plan = plan_study(spec, store)
        study_id = store.find_study(owner, plan.keys)
        if study_id is not None:
            with self._lock:
                live = self._studies.get(study_id)
            if live is not None and live.status == "running":
                return live
            record = store.load_study(study_id, owner)
            if record["status"] == "running" and _alive(record["runner"]) and record["runner"] != self._token:
                raise DMLCoreError("This study is running on another server process; open it under Stored studies "
                                   "once it ends, or stop that server to continue it here.")
            return self._launch(study_id, owner, label or record["label"], spec, plan, record["reused"])
        study_id = store.save_study(owner, label, spec.to_dict(), plan.keys, reused=sorted(plan.stored),
                                    status="running", runner=self._token)
        return self._launch(study_id, owner, label, spec, plan, None)

    def resume_interrupted(self) -> list[StudyState]:
        """Continue every study left "running" in the store by a server that is gone."""
        out = []
        for row in self.registry.store.list_studies():
            if row["status"] != "running" or _alive(row["runner"]):
                continue
            record = self.registry.store.load_study(row["id"])
            try:
                spec = as_spec(record["spec"])
                check_study(spec)
                plan = plan_study(spec, self.registry.store)
            except DMLCoreError as exc:      # refused now (a limit checked since): it stays interrupted
                self.registry.store.set_study_status(row["id"], "interrupted")
                _log_refused(row["id"], exc)
                continue
            out.append(self._launch(row["id"], row["owner"], record["label"], spec, plan, record["reused"]))
        return out

    def _launch(self, study_id: str, owner: str, label: str, spec, plan, reused) -> StudyState:
        store = self.registry.store
        reused = set(plan.stored) if reused is None else set(reused)
        earlier = sum(1 for key in plan.stored if key not in reused)
        store.set_study_status(study_id, "running", self._token)
        state = StudyState(study_id, owner, label, spec, plan.total, sum(1 for k in plan.stored if k in reused),
                           len(plan.to_run), plan.estimate_seconds, self.registry.workers, earlier=earlier)
        state._reused_keys = reused
        state._rows = [{**plan.stored[key], "reused": key in reused} for key in plan.keys if key in plan.stored]
        state._order = {key: i for i, key in enumerate(plan.keys)}
        state._curves = stored_curves(store, [key for key in plan.keys if key in plan.stored])
        with self._lock:
            self._studies[study_id] = state
        threading.Thread(target=self._drive, args=(state,), name=f"dmlcore-study-{study_id[:8]}",
                         daemon=True).start()
        return state

    def _drive(self, state: StudyState) -> None:
        executor = QueueExecutor(self.registry, state.owner, _group(state.id), state.label or "study",
                                 state._stop)
        try:
            final = run_study(state.spec, executor=executor, store=self.registry.store, callback=state._event,
                              should_stop=state._stop.is_set, fit_fn=run_fit_config,
                              reused_keys=state._reused_keys)
        except Exception as exc:  # the study is over; what finished is stored
            if self._closed or getattr(self.registry, "_closed", False):     # this server is stopping: the study stays "running", for the next one to continue
                state.status, state.error = "interrupted", "The server stopped; the next server continues the study."
                state.finished = time.time()
                return
            state.status, state.error = "failed", f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        else:
            final.study_id = state.id
            state._final = final
            if final.ran and final.failed == final.ran:
                state.status = "failed"          # every fit it ran failed: the reasons are in the result
            else:
                state.status = "cancelled" if state._stop.is_set() and state.ran < state.to_run else "done"
        state.finished = time.time()
        if not self._closed and not getattr(self.registry, "_closed", False):
            self.registry.store.set_study_status(state.id, state.status)

    def close(self) -> None:
        """Stop driving this server's studies; those running stay "running" in the store (the next
        server's Studies continues them)."""
        self._closed = True
        _LIVE.discard(self._token)

    def get(self, study_id: str, owner: str) -> StudyState | None:
        with self._lock:
            state = self._studies.get(study_id)
        return state if state is not None and state.owner == owner else None

    def latest(self, owner: str) -> StudyState | None:
        with self._lock:
            mine = [s for s in self._studies.values() if s.owner == owner]
        return max(mine, key=lambda s: s.started) if mine else None

    def cancel(self, study_id: str, owner: str) -> bool:
        state = self.get(study_id, owner)
        if state is None or state.status != "running":
            return False
        state._stop.set()
        for snap in self.registry.list(owner):
            if snap.group == _group(study_id) and snap.active:
                self.registry.cancel(snap.id, owner)
        return True


def executor_note(registry: JobRegistry) -> str:
    """Where the server's fits run, in words: its local worker processes, a Ray cluster (with its
    address, ``DMLCORE_RAY_ADDRESS``), a local Ray instance, or its own threads."""
    kind = getattr(getattr(registry, "_executor", None), "kind", None)
    workers = f"{registry.workers} fit{'s' if registry.workers != 1 else ''} at once"
    if kind == "ray":
        address = os.environ.get("DMLCORE_RAY_ADDRESS")
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        return f"Ray: {where} ({workers})"
    if kind == "local":
        return f"local worker processes on this server ({workers})"
    return f"this server's own threads ({workers})"


def _row_count(config: dict) -> int:
    """The rows a fit of ``config`` sees, for its cost estimate: N, a real data set's rows, else 1000."""
    info = REAL_DATASETS.get(config["dataset"])
    return int(config["data"].get("n") or (info.rows if info is not None else 1000))


def _alive(runner: str | None) -> bool:
    """Whether the server ``runner`` ("pid:token") still drives its studies: its process lives and, when
    it is this process, its Studies has not been closed."""
    if not runner or ":" not in runner:
        return False
    pid_text = runner.split(":", 1)[0]
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return runner in _LIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # a process of another user has that id now
        return True
    return True


def _log_refused(study_id: str, exc: Exception) -> None:
    import logging
    logging.getLogger(__name__).warning("study %s is not continued: its grid is refused now (%s)", study_id, exc)


def _group(study_id: str) -> str:
    return f"study {study_id}"


def study_files(result, spec=None) -> bytes:
    """A zip of every file of the study (see dmlcore.studies.report.write_outputs)."""

    with tempfile.TemporaryDirectory() as folder:
        files = write_outputs(result, folder, spec=spec)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, path in files.items():
                archive.write(path, name)
    return buffer.getvalue()
