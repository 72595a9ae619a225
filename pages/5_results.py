"""Results: estimated against true causal functions, MSE and time, fold-wise losses, downloads, stored runs.

A thin script: the sections are drawn by dashboard/results_view.py and dashboard/effects_view.py."""

import streamlit as st

from dashboard import effects_view, results, results_view, state, ui

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

ss = st.session_state

st.title("Results")
if ss.get(state.DEMO_SECONDS):
    st.success(f"Demo finished: {ss.pop(state.DEMO_SECONDS):.1f} s from the click to these results.",
               icon=":material/timer:")
items = results.collect()
active = [s for s in state.snapshots() if s.active]
if active:
    st.info(f"{len(active)} run(s) still training.", icon=":material/hourglass_top:")
    st.page_link(ui.TRAIN, label="Follow them on Train", icon=":material/model_training:")
chosen = []
if not items:
    st.info("No finished runs yet. Start some on Train, try the demo on Home, or reload a stored run below.")
else:
    chosen = results_view.choose_runs(items)
    if chosen:
        effects_view.follow_fitted_clusters(chosen)
        with ui.guarded("draw the estimated curves"):
            results_view.curves_section(chosen)
        with ui.guarded("summarize the runs"):
            results_view.metrics_section(chosen)
        with ui.guarded("show the run's losses and downloads"):
            results_view.details_section(chosen)
    else:
        st.info("Choose at least one run to compare.")
with ui.guarded("read the run store"):
    results_view.stored_section(items, chosen)
state.remember()  # a reload of this browser finds the data and choices again
