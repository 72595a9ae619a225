"""Starting fits in the background: from the Train page and from the home page's demo."""

from __future__ import annotations

import time

import streamlit as st
from threadpoolctl import threadpool_limits

from dashboard import state
from dashboard.plan import DEMO_DATA, DEMO_SETTINGS, build_plan
from dmlcore.data.registry import SIMULATED, load_dataset
from dmlcore.errors import DMLCoreError
from dmlcore.runs import fit_run


def fit_task(data, method: str, *, truth, dataset: str, **kwargs):
    """A JobRegistry task running ``fit_run`` with one OpenMP thread.

    torch and scikit-learn each bring their own OpenMP runtime; in a worker thread with two
    threads each, gradient boosting ran 5x slower here (58 s instead of 11 s for DML-CMR on
    2,000 rows). One OpenMP thread per worker, two workers, measured fastest on 2 cores.
    """
    def task(report, should_stop):
        with threadpool_limits(limits=1, user_api="openmp"):
            return fit_run(data, method, truth=truth, dataset=dataset, callback=report,
                           should_stop=should_stop, **kwargs)
    return task


def dataset_from_registry(name: str, **params) -> state.Dataset:
    """Load a built-in data set (simulated or real) by name; raises DMLCoreError."""
    loaded = load_dataset(name, **params)
    title, caveat = SIMULATED.get(name, ""), None
    if name not in SIMULATED:
        from dmlcore.data.datasets import REAL_DATASETS
        info = REAL_DATASETS[name]
        title, caveat = info.title, info.caveat
    return state.Dataset(name=name, source="simulated" if name in SIMULATED else "real",
                         table=loaded.data.table, suggested=loaded.data, truth=loaded.truth,
                         params=dict(loaded.params), title=title, caveat=caveat)


def start_batch() -> tuple[int, list[str], list[str]]:
    """Queue the fits of the current choices; returns (batch, job ids, error messages)."""
    ss = st.session_state
    ds, data = state.dataset(), state.causal()
    if ds is None or data is None:
        return 0, [], ["Load data and assign valid roles first."]
    batch = state.next_batch()
    fits, errors = build_plan(ss, data, batch)
    if errors:
        return batch, [], list(errors.values())
    reg, owner, truth = state.registry(), state.owner(), state.truth()
    ids, problems = [], []
    for fit in fits:
        try:
            ids.append(reg.submit(owner, fit.label, fit_task(data, fit.method, truth=truth, dataset=ds.name,
                                                             data_params=ds.params, **fit.kwargs)))
        except DMLCoreError as err:
            problems.append(f"{fit.label}: {err}")
    state.add_jobs(ids)
    if ids:
        ss["follow_batch"] = batch
        ss["batch_started"] = time.time()
    return batch, ids, problems


def start_demo() -> tuple[int, list[str], list[str]]:
    """Simulate the demo data, choose the demo estimators and queue them."""
    params = {k: v for k, v in DEMO_DATA.items() if k != "name"}
    ds = dataset_from_registry(DEMO_DATA["name"], **params)
    state.set_dataset(ds)
    for key, value in DEMO_SETTINGS.items():
        st.session_state[key] = list(value) if isinstance(value, list) else value
    batch, ids, problems = start_batch()
    st.session_state["demo_batch"] = batch
    st.session_state["demo_clicked"] = time.time()
    return batch, ids, problems
