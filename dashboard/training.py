"""Starting fits in the background: from the Train page and from the home page's demo."""

from __future__ import annotations

import logging
import time

import streamlit as st
from dashboard import fits, state
from dashboard.plan import DEMO_DATA, DEMO_SETTINGS, build_plan
from dmlcore.data.registry import SIMULATED, load_dataset
from dmlcore.errors import DMLCoreError
from dmlcore.process import one_openmp_thread  # noqa: F401 (the pages' fits in Streamlit's script thread)
from dmlcore.runs.typed import RunRecord


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
    planned, errors = build_plan(ss, data, batch)
    if errors:
        return batch, [], list(errors.values())
    truth = state.truth()
    ids, problems = [], []
    for fit in planned:
        try:
            ids.append(fits.submit(fit.label, data=data, method=fit.method, truth=truth, dataset=ds.name,
                                   data_params=ds.params, **fit.kwargs))
        except DMLCoreError as err:
            problems.append(f"{fit.label}: {err}")
    if ids:
        ss[state.FOLLOW_BATCH] = batch
    return batch, ids, problems


def start_demo() -> tuple[int, list[str], list[str]]:
    """Simulate the demo data, choose the demo estimators and queue them."""
    params = {k: v for k, v in DEMO_DATA.items() if k != "name"}
    params["seed"] = int(st.session_state.get(state.DEMO_SEED, DEMO_DATA["seed"]))   # a class: one seed each
    ds = dataset_from_registry(DEMO_DATA["name"], **params)
    state.set_dataset(ds)
    for key, value in DEMO_SETTINGS.items():
        st.session_state[key] = list(value) if isinstance(value, list) else value
    st.session_state[state.DEMO_CLICKED] = time.time()
    return start_batch()


# ------------------------------------------------------------------ following runs
POLL_RUNNING = 1.5     # seconds between refreshes while one of the session's runs trains
POLL_WAITING = ((60, 10.0), (20, 5.0), (0, 2.0))  # (starts in more than s, refresh every s)


def poll_seconds(snaps) -> float | None:
    """How often the Train page refreshes: often while a run of the session trains, rarely while
    its runs only wait (the longer the wait, the rarer), never when nothing is active."""
    if any(s.status == "running" for s in snaps):
        return POLL_RUNNING
    waits = [s.starts_in or 0.0 for s in snaps if s.status == "queued"]
    if not waits:
        return None
    return next(every for above, every in POLL_WAITING if min(waits) >= above)


def about(seconds: float) -> str:
    """A duration as people say it: 'about 40 s', 'about 3 min'."""
    if seconds < 55:
        return f"about {max(5, 5 * round(seconds / 5)):.0f} s"
    return f"about {max(1, round(seconds / 60)):.0f} min"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def status_line(snap) -> str:
    """What a run is doing, in words: its place in the queue and the time left while active."""
    if snap.status == "queued":
        again = "queued again after a server restart · " if snap.restored else ""
        if snap.position is None:
            return again + "waiting for a free worker"
        return (f"{again}waiting · {ordinal(snap.position)} in line · starts in {about(snap.starts_in)}, "
                f"done in {about(snap.ends_in)} (estimates)")
    if snap.status == "running":
        where = f" · fold {snap.fold}" if snap.fold is not None else ""
        spent = f" · {time.time() - snap.started:.0f} s so far" if snap.started else ""
        left = f" · {about(snap.ends_in)} left" if snap.ends_in is not None else ""
        stop = " · stopping after this step" if snap.cancel_requested else ""
        return f"{snap.stage or 'starting'}{where}{spent}{left}{stop}"
    if snap.status == "done":
        rec = snap.run.result if snap.run is not None else None
        if rec is None:
            return "done · in the run store (see Results)"
        return f"done {took(snap, rec)}" + (f" · MSE {rec.mse:.4g}" if rec.mse is not None else "")
    return snap.status


def took(snap, rec: RunRecord | dict) -> str:
    """How long the run took by the wall clock, from its start to its end (bootstrap and held-out
    refits included), and the fit's own share when they differ."""
    rec = rec if isinstance(rec, RunRecord) else RunRecord.from_dict(rec)
    fit = float(rec.seconds or 0.0)
    if snap.started is None or snap.finished is None:
        return f"in {fit:.1f} s (the fit)"
    wall = max(snap.finished - snap.started, fit)
    boot = rec.effect.bootstrap if rec.effect is not None else None
    extra = ([f"{boot.refits} bootstrap refits"] if boot else []) + (["the held-out residual"] if rec.heldout else [])
    if not extra or wall < fit + 1.0:
        return f"in {wall:.1f} s"
    return f"in {wall:.1f} s (the fit {fit:.1f} s, then {' and '.join(extra)})"


def batch_to_show(snaps) -> bool:
    """Whether the demo's batch (``demo_goto_results``: its number, set by Home's button) has ended
    with a result, so that Results should open now; asked by the Train page at each look.

    However late that look comes after the end: the page's refresh timer runs in the browser, and a
    slow or busy browser's tick can come many seconds late. (Asking for an end within the last 10 s,
    as before, left 14 of 20 students of a class run on Train for good: their ticks came later,
    bench/results/class-load-20-local-2026-11-27-1323-class.json.) A student who opened another page
    meanwhile is moved when they come back to Train; a batch started after the demo is not followed."""
    ss = st.session_state
    demo = ss.get(state.DEMO_GOTO_RESULTS)
    batch = [s for s in snaps if state.batch_of(s.label) == demo]
    if not (demo and batch and all(s.ended for s in batch)):
        return False
    ss.pop(state.DEMO_GOTO_RESULTS)
    if any(s.status == "done" for s in batch):
        ss[state.DEMO_SECONDS] = time.time() - ss.get(state.DEMO_CLICKED, time.time())
        return True
    return False


def stop_own_refresh() -> None:
    """Stop the refresh timer of the fragment that is running, in the browser and on the server.

    Called before a fragment that refreshes itself (``run_every``) switches the page: otherwise its
    timer outlives the page, and a tick that lands while the next page is still being drawn is
    queued behind it and then run with the old page's identity, which redraws the old page's
    panel over the new one or blanks it (bench/results/class-load-20-*-2026-11-26-*.json). Uses
    Streamlit's own stop message (what it sends for fragments it evicts); if this Streamlit has
    no such internals, nothing is done and the page's guard (``page_now``) still applies.
    """
    try:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState, get_script_run_ctx
        ctx, fragment_id = get_script_run_ctx(), ThreadState.get().fragment_id
        if ctx is None or not fragment_id:
            return
        msg = ForwardMsg()
        msg.stop_auto_rerun.fragment_ids.append(fragment_id)
        ctx.enqueue(msg)
        if ctx.fragment_storage.contains(fragment_id):
            ctx.fragment_storage.delete(fragment_id)
    except (ImportError, AttributeError, RuntimeError) as err:
        logging.getLogger("dashboard").info("Could not stop the fragment's refresh: %s", err)
