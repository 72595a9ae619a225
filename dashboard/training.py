"""Starting fits in the background: from the Train page and from the home page's demo."""

from __future__ import annotations

import time

import streamlit as st
from threadpoolctl import threadpool_limits

from dashboard import state
from dashboard.plan import DEMO_DATA, DEMO_SETTINGS, build_plan
from dmlcore.data.registry import SIMULATED, load_dataset
from dmlcore.errors import DMLCoreError


def one_openmp_thread():
    """A context in which OpenMP code (scikit-learn's gradient boosting) uses one thread.

    torch and scikit-learn each bring their own OpenMP runtime (two libgomp copies). Outside the
    main thread -- here Streamlit's script thread; job workers do the same in dmlcore.jobs --
    gradient boosting with two OpenMP threads ran about 5x slower than with one.
    """
    return threadpool_limits(limits=1, user_api="openmp")


def dataset_from_registry(name: str, **params) -> state.Dataset:
    """Load a built-in data set (simulated or real) by name; raises DMLCoreError."""
    loaded = load_dataset(name, **params)
    description, caveat = SIMULATED.get(name, ""), None
    title = description.split(":")[0]
    if name not in SIMULATED:
        from dmlcore.data.datasets import REAL_DATASETS
        info = REAL_DATASETS[name]
        title, caveat, description = info.title, info.caveat, ""
    return state.Dataset(name=name, source="simulated" if name in SIMULATED else "real",
                         table=loaded.data.table, suggested=loaded.data, truth=loaded.truth,
                         params=dict(loaded.params), title=title, caveat=caveat, description=description)


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
            ids.append(reg.submit_fit(owner, fit.label, data=data, method=fit.method, truth=truth,
                                      dataset=ds.name, data_params=ds.params, **fit.kwargs))
        except DMLCoreError as err:
            problems.append(f"{fit.label}: {err}")
    state.add_jobs(ids)
    if ids:
        ss["follow_batch"] = batch
    return batch, ids, problems


def start_demo() -> tuple[int, list[str], list[str]]:
    """Simulate the demo data, choose the demo estimators and queue them."""
    params = {k: v for k, v in DEMO_DATA.items() if k != "name"}
    ds = dataset_from_registry(DEMO_DATA["name"], **params)
    state.set_dataset(ds)
    for key, value in DEMO_SETTINGS.items():
        st.session_state[key] = list(value) if isinstance(value, list) else value
    st.session_state["demo_clicked"] = time.time()
    return start_batch()
