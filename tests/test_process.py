"""A fit never changes its caller's process: torch's threads are scoped to the fit (issue 34)."""

import numpy as np
import pandas as pd
import pytest
import torch

from dmlcore import process
from dmlcore.data.roles import CausalData
from dmlcore.estimators import make_estimator
from dmlcore.estimators._base import CMREstimator


@pytest.fixture
def owner_unset(monkeypatch):
    """As in a script or notebook that never called set_threads (the CLI in this process may have)."""
    monkeypatch.setattr(process, "_owner_set", False)
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    yield
    torch.set_num_threads(before)


def _iv_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    u = rng.normal(size=n)
    x = z + u + rng.normal(size=n)
    y = 2 * x + u + rng.normal(size=n)
    return CausalData(pd.DataFrame({"y": y, "x": x, "z": z}), "iv", outcome="y", treatment="x", instrument="z")


class _Probe(CMREstimator):
    """Records torch's threads while it fits."""

    def _fit(self, data, monitor):
        self.threads_seen_ = torch.get_num_threads()
        self.input_columns_ = ["x"]

    def predict(self, X):
        return np.zeros(len(X))


def test_a_2sls_fit_leaves_the_callers_threads(owner_unset):
    make_estimator("2sls").fit(_iv_data())
    assert torch.get_num_threads() == 3


def test_a_fit_runs_with_the_default_and_restores(owner_unset, monkeypatch):
    monkeypatch.setenv(process.THREADS_ENV, "2")
    probe = _Probe().fit(_iv_data())
    assert probe.threads_seen_ == 2 and torch.get_num_threads() == 3


def test_scopes_nest_and_the_last_one_restores(owner_unset):
    with process.scoped_threads(2):
        assert torch.get_num_threads() == 2
        with process.scoped_threads(1):        # the outer scope's count stands
            assert torch.get_num_threads() == 2
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == 3


def test_the_owners_choice_stands_inside_a_fit(owner_unset, monkeypatch):
    monkeypatch.setattr(process, "_owner_set", True)      # as after the CLI's --threads
    assert _Probe().fit(_iv_data()).threads_seen_ == 3


def _blas_threads() -> set[int]:
    from threadpoolctl import threadpool_info
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_the_dashboards_page_fits_run_blas_on_one_thread(monkeypatch):
    """Beside the job workers, BLAS's two threads spent 3-8 times the CPU of one on the Results page's 2SLS
    (issue 47): the page's own fits run on one, and the count is put back after."""
    from threadpoolctl import threadpool_limits

    from dashboard import fits
    seen = []
    monkeypatch.setattr(fits, "fit_run", lambda *a, **k: seen.append(_blas_threads()))
    with threadpool_limits(limits=2, user_api="blas"):
        fits.fit_now(_iv_data())
        assert seen == [{1}] and _blas_threads() == {2}
