"""Thread settings of a process that fits, owned by whoever owns the process.

* torch's threads: :func:`set_threads` is for the owner of a process -- the CLI (``--threads``) --
  and changes the process for good. A library call never does: ``CMREstimator.fit`` runs in
  :func:`fit_threads`, which, when the owner has set nothing, gives the fit one thread
  (``DMLCORE_TORCH_THREADS`` overrides it; measured fastest for these small networks on 2 cores,
  docs/benchmarks.md) and puts back the caller's count when the fit returns. The executors' workers
  run each item in :func:`scoped_threads` with the study's count (:func:`dmlcore.executors.call_with_threads`).
  Scopes nest: the outermost one sets the count, the last one to leave restores it. Importing
  dmlcore changes nothing.
* OpenMP in a thread other than the main one: :func:`one_openmp_thread`. torch and
  scikit-learn each bring their own OpenMP runtime (two libgomp copies); outside the main thread
  gradient boosting with two OpenMP threads ran about 5x slower than with one. OpenMP's limit is
  per thread, so the job workers and the dashboard's script thread enter this context around a fit.
* BLAS (numpy's and scipy's OpenBLAS) in the dashboard's server, which serves pages beside its job
  workers: :func:`one_blas_thread` around the fits a page makes in its own run. Called in a thread other
  than the main one (a Streamlit script thread), this OpenBLAS applies the limit to the calling thread
  (measured: the main thread's count did not change). Its default two threads, beside the two workers
  on 2 cores, spent 0.8-2.0 s of CPU on the Results page's linear IV inference of the demo's data where
  one thread spent 0.24 s, with the same numbers (a check on the shared machine, issue 47).
* glibc's reuse of freed memory is switched on when the first image network is built
  (:func:`dmlcore.learners.image.keep_freed_memory`), in the processes that need it only.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager, nullcontext

import torch
from threadpoolctl import threadpool_limits

THREADS_ENV = "DMLCORE_TORCH_THREADS"
_owner_set = False          # set_threads was called: the process's owner chose its threads
_lock = threading.Lock()
_depth = 0                  # open scoped_threads contexts
_found = 1                  # the count the outermost scope found (restored when the last one leaves)


def default_threads() -> int:
    """Torch threads for a fit: ``DMLCORE_TORCH_THREADS``, else 1."""
    return int(os.environ.get(THREADS_ENV, "1"))


def set_threads(threads: int | None = None) -> None:
    """Set torch's threads for this whole process (None: :func:`default_threads`); for the process's
    owner only (the CLI), never for a library call."""
    global _owner_set
    torch.set_num_threads(default_threads() if threads is None else int(threads))
    _owner_set = True


@contextmanager
def scoped_threads(threads: int | None = None):
    """Torch's threads set to ``threads`` (None: :func:`default_threads`) inside the context and put
    back as found when it leaves; inside an open scope the outer scope's count stands."""
    global _depth, _found
    with _lock:
        if _depth == 0:
            _found = torch.get_num_threads()
            wanted = default_threads() if threads is None else int(threads)
            if wanted != _found:
                torch.set_num_threads(wanted)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and torch.get_num_threads() != _found:
                torch.set_num_threads(_found)


def fit_threads():
    """The context a fit runs in: the owner's threads when :func:`set_threads` was called, else
    :func:`scoped_threads` with the default (restored after the fit)."""
    return nullcontext() if _owner_set else scoped_threads()


def one_openmp_thread():
    """A context in which OpenMP code (scikit-learn's gradient boosting) in this thread uses one thread."""
    return threadpool_limits(limits=1, user_api="openmp")


def one_blas_thread():
    """A context in which BLAS (numpy's and scipy's OpenBLAS) in this thread uses one thread (module notes)."""
    return threadpool_limits(limits=1, user_api="blas")
