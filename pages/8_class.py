"""Class: the teacher's pooled view of the class's demo runs (behind the teacher's code)."""

import time

import streamlit as st

from dashboard import state, teacher
from dashboard.plan import DEMO_DATA
from dmlcore.teaching import classroom, figures

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)
ss = st.session_state

st.title("Class")
st.markdown(
    "**The exercise.** Every student opens *Home*, types a **data seed** of their own (their seat number, say) "
    "and clicks *Run the demo*: the same four methods on their own simulated ticket-demand data set. This page, "
    "for the teacher, pools the class's results into one histogram per method as they come in: the class "
    "together runs a simulation study that no single laptop would. It shows what each run estimated and how "
    "well, never whose run it was.")


def locked() -> bool:
    if ss.get(state.TEACHER_OK):
        return False
    tries = ss.get(state.TEACHER_TRIES, 0)
    if tries >= teacher.MAX_TRIES:
        st.error("Too many wrong codes in this session. Close the browser tab and try again.")
        return True
    with st.form("teacher_form"):
        typed = st.text_input("Teacher code", type="password", key=state.TEACHER_TYPED,
                              help="Printed in the server's console when it starts (scripts/run.sh), or set "
                                   "with DMLCORE_TEACHER_CODE.")
        if st.form_submit_button("Open the class view"):
            if teacher.check(typed):
                ss[state.TEACHER_OK] = True
                st.rerun()
            ss[state.TEACHER_TRIES] = tries + 1
            if ss[state.TEACHER_TRIES] >= teacher.MAX_TRIES:
                st.rerun()
            st.error("That is not the teacher's code.")
    return True


def pooled_view():
    since = teacher.round_since()
    table, sessions = classroom.pool(state.store(), dataset=DEMO_DATA["name"], n=DEMO_DATA["n"], since=since)
    if table.empty:
        st.info(f"No demo runs since {time.strftime('%H:%M:%S', time.localtime(since))} yet. This view refreshes "
                "every 5 s.", icon=":material/hourglass_top:")
        return
    s = classroom.summary(table)
    seeds = table["data seed"].nunique()
    st.markdown(f"**{classroom.count(len(table), 'run')}** from **{classroom.count(sessions, 'session')}** on "
                f"**{classroom.count(seeds, 'data seed')}** since {time.strftime('%H:%M:%S', time.localtime(since))} "
                "(refreshes every 5 s).")
    st.plotly_chart(figures.class_histograms(table, list(s["method"])), key=state.CLASS_HIST)
    st.dataframe(s.drop(columns=["method"]), hide_index=True, key=state.CLASS_SUMMARY,
                 column_config={c: st.column_config.NumberColumn(format="%.3g") for c in ("median MSE", "q25", "q75")})
    effects = classroom.effect_summary(table)
    if len(effects):
        st.markdown("**The estimated effects around the truth.** Each point is one run's estimated effect (the "
                    "average slope of f in the price); the red line is the design's true effect, the black bars "
                    "the medians.")
        st.plotly_chart(figures.class_effects(table, list(s["method"]), effects.attrs["truth"]), key=state.CLASS_EFFECTS)
        st.dataframe(effects.drop(columns=["method"]), hide_index=True, key=state.CLASS_EFFECTS_TABLE,
                     column_config={c: st.column_config.NumberColumn(format="%.3g")
                                    for c in ("median effect", "mean error", "spread", "RMSE")})
        lo, hi = effects.attrs["truth range"]
        st.caption("Mean error: the estimates minus each run's own true effect (the design's average slope over "
                   "that run's data" + (f", {lo:.3g} to {hi:.3g} here; the line marks their median)." if hi - lo > 1e-9
                                         else ").") + " Spread: the standard deviation of the estimates over the runs.")
    paired = s.attrs.get("paired seeds", 0)
    if paired:
        best = s.iloc[0]
        st.markdown(f"Lowest median MSE: **{best['title']}** ({best['median MSE']:.3g}). On the {paired} data seeds "
                    "every method has run on, each method had the lowest MSE on the number of seeds in the last "
                    "column. The same comparison as a study with many seeds (page *Study*), made by the class.")
    if table["data seed"].nunique() < table.groupby("method").size().max():
        st.caption("Some students used the same data seed: their runs are the same data set fitted again "
                   "(same numbers), so the histograms count them twice.")


if not locked():
    st.fragment(run_every=5)(pooled_view)()
    left, right = st.columns(2)
    if left.button("Start a new round", key=state.CLASS_NEW_ROUND, icon=":material/restart_alt:",
                   help="Pool only the runs stored from now on (for everyone using this server)."):
        teacher.new_round()
        st.rerun()
    if right.button("Leave the teacher view", key=state.CLASS_LEAVE, icon=":material/logout:"):
        ss.pop(state.TEACHER_OK, None)
        st.rerun()
state.remember()  # a reload of this browser finds the data and choices again
