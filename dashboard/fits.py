"""Every fit the dashboard makes, in one place.

Two ways in, and no other: the pages and the ``dashboard`` modules call these functions, never
``fit_run`` or an estimator's ``fit`` (tests/test_dashboard_state.py looks for such calls).

- :func:`submit` queues a fit in the server's job registry (:mod:`dmlcore.jobs`): it runs in a
  worker process, reports its progress, can be cancelled on Train, survives a page switch and a
  server restart. The Train page's batches, the home page's demo and the Results page's bootstrap
  all start their fits here.
- :func:`fit_now` fits the linear IV coefficient method (2SLS) in the page's own script run. It is
  synchronous by design: 2SLS is closed-form algebra (0.1-0.4 s measured on Card's 3,010 rows, the
  reference fit with its held-out residual and debiased effect the slowest), so a job would add a turn
  in the queue and a worker's start to it, and the page would wait a rerun for a number it can draw now. The Results page uses it for the
  2SLS reference drawn beside nonlinear fits on real data and for the linear IV inference under the
  page's covariance choice; both are kept in the session's caches (:func:`dashboard.state.cached`).
"""

from __future__ import annotations

from dashboard import state
from dmlcore.errors import DMLCoreError
from dmlcore.estimators._registry import LINEAR_REFERENCE
from dmlcore.process import one_blas_thread
from dmlcore.runs import Run, fit_run



def submit(label: str, *, data, method: str, truth=None, dataset: str | None = None, **fit_kwargs) -> str:
    """Queue ``fit_run(data, method, truth=truth, dataset=dataset, **fit_kwargs)`` as this session's
    background job labelled ``label``; returns its job id. An unknown setting, or one ``method`` does
    not read, is refused at once (DMLCoreError)."""
    return state.registry().submit_fit(state.owner(), label, data=data, method=method, truth=truth,
                                       dataset=dataset, **fit_kwargs)


def fit_now(data, *, method: str = LINEAR_REFERENCE, dataset: str | None = None, **settings) -> Run:
    """``fit_run(data, method, dataset=dataset, **settings)`` here and now, for the linear IV method only
    (why synchronous: the module's docstring). Any other method is refused: queue it with :func:`submit`."""
    if method != LINEAR_REFERENCE:
        raise DMLCoreError(f"fit_now fits {LINEAR_REFERENCE!r} only, not {method!r}: queue other methods with "
                           "dashboard.fits.submit, which runs them in the background.")
    with one_blas_thread():     # beside the job workers, two BLAS threads spent 3-8 times the CPU (dmlcore.process)
        return fit_run(data, method, dataset=dataset, **settings)
