"""Fixtures shared by the tests: small linear IV and PCL data with a known f, and the dashboard's runtime."""

import numpy as np
import pandas as pd
import pytest
import streamlit as st
import torch

from dmlcore import process
from dmlcore.data.roles import CausalData


def make_linear_iv(n=600, seed=0, *, slope=2.0, intercept=0.0, strength=2.0, confounding=3.0, first_noise=1.0,
                   noise=1.0, covariates=0, covariate_shift=0.3, binary=False) -> CausalData:
    """Linear IV with a hidden confounder u: a = strength z + covariate_shift x'1 + u (+ first_noise e'),
    or 1{a > 0} when ``binary``; y = intercept + slope a + x'1 + confounding u + noise e. f is linear
    (slope ``slope``); OLS of y on a is biased by the confounding. x: ``covariates`` 0/1 columns x0, x1, ..."""
    rng = np.random.default_rng(seed)
    z, u = rng.normal(size=n), rng.normal(size=n)
    x = rng.integers(0, 2, size=(n, covariates)).astype(float)
    a = strength * z + covariate_shift * x.sum(1) + u
    if first_noise:
        a = a + first_noise * rng.normal(size=n)
    if binary:
        a = (a > 0).astype(float)
    y = intercept + slope * a + x.sum(1) + confounding * u + noise * rng.normal(size=n)
    table = pd.DataFrame({"y": y, "a": a, "z": z, **{f"x{j}": x[:, j] for j in range(covariates)}})
    return CausalData(table, "iv", "y", treatment="a", instrument="z", covariates=[f"x{j}" for j in range(covariates)])


def make_linear_pcl(n=600, seed=0) -> CausalData:
    """Y = 2A + 3U + noise with proxies Z = U + e, W = U + e': the bridge h(a, w) = 2a + 3w, E[Y | do(a)] = 2a."""
    r = np.random.default_rng(seed)
    u = r.normal(size=n)
    z, w = u + 0.5 * r.normal(size=n), u + 0.5 * r.normal(size=n)
    a = u + r.normal(size=n)
    y = 2 * a + 3 * u + 0.3 * r.normal(size=n)
    return CausalData(pd.DataFrame(dict(y=y, a=a, z=z, w=w)), "pcl", "y", treatment="a", treatment_proxy="z",
                      outcome_proxy="w")


@pytest.fixture
def linear_iv():
    """:func:`make_linear_iv` (call it with the design's settings)."""
    return make_linear_iv


@pytest.fixture
def linear_pcl():
    """:func:`make_linear_pcl`."""
    return make_linear_pcl


@pytest.fixture(autouse=True)
def refits_in_process(monkeypatch):
    """`dmlcore fit` run by a test refits in its own process (no worker processes started per test; the
    CLI's default starts them: tests/test_concurrent_refits.py checks they give the same record)."""
    monkeypatch.setattr("dmlcore.cli.FIT_JOBS", 1)


@pytest.fixture(autouse=True)
def process_threads_restored():
    """A test that runs the CLI in this process makes it the process's owner (``set_threads``): its torch
    threads and the owner's mark are put back after the test, so later fits run as a library call's do
    (one torch thread; a record's last digits depend on the count)."""
    owner, threads = process._owner_set, torch.get_num_threads()
    yield
    process._owner_set = owner
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


@pytest.fixture
def fresh_runtime(tmp_path, monkeypatch):
    """A new job registry and run store per test (DMLCORE_HOME in a temporary folder); fits run
    in the registry's threads (no worker processes to start for each test)."""
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DMLCORE_EXECUTOR", "inline")
    st.cache_resource.clear()
    yield
    try:
        from dashboard import state
        state.registry().close()
    finally:
        st.cache_resource.clear()
