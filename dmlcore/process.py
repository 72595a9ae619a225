"""Process-wide settings of a process that fits: set once, by whoever starts the work.

* torch's threads: :func:`set_threads` -- the CLI (``--threads``), the executors' workers (per
  item, :func:`dmlcore.executors.call_with_threads`) and, for a script or notebook that set
  nothing, the first fit (:func:`ensure_threads`, from ``CMREstimator.fit``): one thread per
  process (``DMLCORE_TORCH_THREADS`` overrides it) measured fastest for these small networks on
  2 cores (docs/benchmarks.md). Importing dmlcore changes nothing.
* OpenMP in a thread other than the main one: :func:`one_openmp_thread`. torch and
  scikit-learn each bring their own OpenMP runtime (two libgomp copies); outside the main thread
  gradient boosting with two OpenMP threads ran about 5x slower than with one. OpenMP's limit is
  per thread, so the job workers and the dashboard's script thread enter this context around a fit.
* glibc's reuse of freed memory is switched on when the first image network is built
  (:func:`dmlcore.learners.image.keep_freed_memory`), in the processes that need it only.
"""

from __future__ import annotations

import os

import torch
from threadpoolctl import threadpool_limits

THREADS_ENV = "DMLCORE_TORCH_THREADS"
_configured = False


def default_threads() -> int:
    """Torch threads per fitting process: ``DMLCORE_TORCH_THREADS``, else 1."""
    return int(os.environ.get(THREADS_ENV, "1"))


def set_threads(threads: int | None = None) -> None:
    """Set torch's threads for this process (None: :func:`default_threads`)."""
    global _configured
    torch.set_num_threads(default_threads() if threads is None else int(threads))
    _configured = True


def ensure_threads() -> None:
    """:func:`set_threads` with the default, unless this process has set its threads already."""
    if not _configured:
        set_threads()


def one_openmp_thread():
    """A context in which OpenMP code (scikit-learn's gradient boosting) in this thread uses one thread."""
    return threadpool_limits(limits=1, user_api="openmp")
