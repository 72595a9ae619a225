"""Train: start the chosen fits in the background and follow them (progress, live losses, cancel).

The fits run in worker processes; this page only reads their state. It refreshes in a fragment,
often while a run of the session trains and rarely while its runs wait (training.poll_seconds);
when the refresh rate must change, or the demo's batch has ended, the fragment itself starts the
full run or the switch to Results, so that no refresh of a fragment is left pending across it.
"""

import streamlit as st

from dashboard import plan, state, training, ui
from dmlcore import plots

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

LIVE_POINTS = 60      # points per loss curve in the live chart (redrawn at every poll)
ss = st.session_state


def job_card(snap, *, live_losses: bool):
    """One run: status, progress while active, cancel, errors, and (for one running job) live losses."""
    with st.container(border=True, key=state.JOB_BOX(snap.id)):
        head, button = st.columns([6, 1], vertical_alignment="center")
        head.markdown(f"{ui.STATUS_ICONS[snap.status]} **{snap.label}** — {training.status_line(snap)}")
        if snap.active and not snap.cancel_requested:
            if button.button("Cancel", key=state.JOB_CANCEL(snap.id), icon=":material/stop:"):
                state.registry().cancel(snap.id, state.owner())
                st.rerun()
        if snap.active:
            st.progress(min(1.0, max(0.0, snap.progress)), text=f"{snap.progress:.0%}")
        if snap.status == "failed":
            st.error(snap.error or "The fit failed.")
        elif snap.error:
            st.warning(snap.error)
        if snap.run is not None:
            for note in snap.run.result.notes or []:
                st.caption(f":material/info: {note}")
        if live_losses and snap.losses:
            st.caption("Live losses of this run, per fold (solid: training, dotted: validation).")
            st.plotly_chart(plots.loss_figure(snap.losses, height=280, max_points=LIVE_POINTS),
                            key=state.JOB_LOSSES(snap.id))


def jobs_panel():
    if ss.get(state.PAGE_NOW, "Train") != "Train":
        # A refresh timer of this fragment that fires after the page changed (the switch to Results
        # below comes from inside the fragment, so its timer outlives it): do nothing. Before, such a
        # run redrew this panel over the Results page and called st.rerun(), whose Results run the
        # next tick interrupted again: under load, 9 of 20 Results pages never finished drawing and
        # 5 went blank (bench/results/class-load-20-local-2026-11-26-evening.json).
        return
    snaps = state.snapshots()
    if training.batch_to_show(snaps):
        training.stop_own_refresh()
        st.switch_page(ui.RESULTS)
    if not ss.pop(state.TRAIN_FULL_RUN, False) and training.poll_seconds(snaps) != ss.get(state.TRAIN_POLL):
        st.rerun()          # the whole page catches up and the refresh rate changes
    if not snaps:
        st.info("No runs yet in this session.")
        return
    batches: dict[int | None, list] = {}
    for snap in snaps:
        batches.setdefault(state.batch_of(snap.label), []).append(snap)
    watched = next((s.id for s in snaps if s.status == "running" and s.losses), None)
    order = sorted(batches, key=lambda b: -1 if b is None else b, reverse=True)
    for i, batch in enumerate(order):
        group = batches[batch]
        done = sum(s.status == "done" for s in group)
        title = f"Batch {batch if batch is not None else '?'} · {done} of {len(group)} done"
        if i == 0 or any(s.active for s in group):
            st.markdown(f"#### {title}")
            for snap in group:
                job_card(snap, live_losses=snap.id == watched)
        else:
            with st.expander(title):
                for snap in group:
                    job_card(snap, live_losses=False)


st.title("Train")
ss[state.PAGE_NOW] = "Train"   # app.py sets it too; AppTest runs a page without naming it there
ds, data = state.dataset(), state.causal()
st.subheader("Next batch")
if ds is None or data is None:
    st.info("Load data and assign valid roles before training.", icon=":material/info:")
    st.page_link(ui.DATA if ds is None else ui.ROLES, label="Go to " + ("Data" if ds is None else "Roles"))
else:
    fits, errors = plan.build_plan(ss, data, state.next_batch())
    truth = state.truth()
    st.markdown(f"On **{ds.name}** ({len(data.table):,} rows, {data.problem.upper()}; "
                f"{'scored against the truth' if truth is not None else 'truth unknown'}):")
    for fit in fits:
        st.markdown(f"- {plan.describe(fit)}")
    for message in errors.values():
        st.error(message)
    if errors:
        st.page_link(ui.ESTIMATORS, label="Fix the settings on Estimators", icon=":material/tune:")
    if st.button("Start training", key=state.TRAIN_START, type="primary", disabled=bool(errors) or not fits,
                 icon=":material/play_arrow:"):
        batch, ids, problems = training.start_batch()
        for problem in problems:
            st.error(problem)
        if ids:
            st.toast(f"Batch {batch}: {len(ids)} run(s) queued.")

st.subheader("Runs")
snaps = state.snapshots()
ss[state.TRAIN_POLL], ss[state.TRAIN_FULL_RUN] = training.poll_seconds(snaps), True
st.fragment(run_every=ss[state.TRAIN_POLL])(jobs_panel)()

follow = ss.get(state.FOLLOW_BATCH)
batch_snaps = [s for s in snaps if state.batch_of(s.label) == follow]
if follow and batch_snaps and all(s.ended for s in batch_snaps):
    st.success(f"Batch {follow} has finished.", icon=":material/check_circle:")
    st.page_link(ui.RESULTS, label="See the results", icon=":material/insights:")

ended = [s.id for s in snaps if s.ended]
if ended and st.button("Clear finished runs from this list", key=state.TRAIN_CLEAR,
                       help="They stay in the run store: reload them on the Results page."):
    state.forget_jobs(ended)
    st.rerun()
state.remember()  # a reload of this browser finds the data and choices again
