"""What runs in a worker process: a fit's spec (:class:`FitSpec`), the fit itself with its
progress link, and the worker's set-up (imports warmed, one OpenMP thread, exit with the server)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Callable

from dmlcore.data.registry import load_dataset
from dmlcore.errors import DMLCoreError
from dmlcore.jobs.channel import Link
from dmlcore.process import one_openmp_thread
from dmlcore.runs import Run, fit_run

Report = Callable[[dict], None]
ShouldStop = Callable[[], bool]


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
            params = dict(self.truth_params)
            self.truth = load_dataset(params.pop("dataset"), **params).truth
        return self.truth

    def run(self, report: Report | None, should_stop: ShouldStop | None) -> Run:
        return fit_run(self.data, self.method, truth=self.ground_truth(), dataset=self.dataset,
                       callback=report, should_stop=should_stop, **self.kwargs)

    @property
    def n(self) -> int:
        return int(len(self.data.table))


def fit_in_worker(payload: dict) -> Run:
    """Run one fit in a worker process, streaming its progress to the server's channel.

    The run comes back without its data and truth (the server has them) and with its curve
    computed, so that the server only draws it.
    """
    _die_with_parent(payload["server"])
    spec: FitSpec = payload["fit"]
    with Link(payload["channel"], payload["job"]) as link, one_openmp_thread():
        run = spec.run(link.report, link.should_stop)
    try:
        run.curve()
    except DMLCoreError:
        pass
    run.data = run.truth = None
    return run


def warm_up(server: int) -> None:
    """Start a worker: importing this module imported what a fit needs (torch, the estimators), so
    the first fit in a new worker process does not wait for it; watch the server."""
    _die_with_parent(server)


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
