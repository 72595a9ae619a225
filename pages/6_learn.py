"""Learn: IV and proximal learning taught with simulations and two real data sets.

The tabs are grouped in three lessons, one per class session of docs/teaching.md, so that a
lesson's tabs fit a projector's width. Each tab is a module of :mod:`dashboard.learn`; the
experiments live in dmlcore.teaching (no Streamlit). Only the open tab computes anything.
"""

import streamlit as st

from dashboard import state, ui
from dashboard.learn import (card, confounding, crossfit, demand, exclusion, forbidden, iv, pliv, proximal, rhc, score,
                             weak)
from dashboard.learn.common import notation

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)
ss = st.session_state

LESSONS = (
    ("1 · Instruments", (("IV and LATE", iv.iv_tab), ("Confounding", confounding.confounding_tab),
                         ("Weak IV", weak.weak_tab), ("Invalid IV", exclusion.exclusion_tab),
                         ("Forbidden regression", forbidden.forbidden_tab), ("Card (1995)", card.card_tab))),
    ("2 · Proxies", (("Proximal learning", proximal.pcl_tab), ("RHC (real data)", rhc.rhc_tab))),
    ("3 · Nuisances and orthogonality", (("Orthogonal score", score.score_tab),
                                         ("Orthogonality that works", pliv.pliv_tab),
                                         ("Cross-fitting", crossfit.crossfit_tab), ("Ticket demand", demand.demand_tab))),
)
LESSON_OF = {label: lesson for lesson, tabs in LESSONS for label, _ in tabs}


def first_tab_of_lesson():
    """A new lesson opens at its first tab."""
    lesson = dict(LESSONS).get(ss.get(state.LEARN_LESSON))
    if lesson:
        ss[state.LEARN_TAB] = lesson[0][0]


def remember_tab(key: str):
    """``learn_tab`` names the open tab whichever lesson it is in (each lesson's tab strip has its own key)."""
    ss[state.LEARN_TAB] = ss[key]


# a compact header for a projector (1,024 x 768): the title with its caption, then the lesson picker and the
# notation box on one row
st.markdown("### Learn", help="Each tab states what a simulation shows and shows it: the numbers in the text are "
            "computed from the experiments on the page. Only the open tab computes. Statements that no experiment "
            "here checks are marked *not simulated here*.")
if ss.get(state.LEARN_TAB) in LESSON_OF:        # a tab chosen by name (a link, a test) opens its lesson
    ss[state.LEARN_LESSON] = LESSON_OF[ss[state.LEARN_TAB]]
ss.setdefault(state.LEARN_LESSON, LESSONS[0][0])
picker, letters = st.columns([3, 1], vertical_alignment="center")
with letters:
    notation()
chosen = picker.radio("Lesson", [lesson for lesson, _ in LESSONS], key=state.LEARN_LESSON, horizontal=True,
                      label_visibility="collapsed", on_change=first_tab_of_lesson,
                      help="The three class sessions of the lesson plan (docs/teaching.md).")
number = [lesson for lesson, _ in LESSONS].index(chosen) + 1
tabs, key = dict(LESSONS)[chosen], state.LEARN_TABS(number)
if ss.get(state.LEARN_TAB) in [label for label, _ in tabs]:
    ss[key] = ss[state.LEARN_TAB]
for tab, (_, draw) in zip(st.tabs([label for label, _ in tabs], key=key, on_change=remember_tab, args=(key,)), tabs):
    if tab.open:
        with tab, ui.guarded(f"draw the lesson {draw.__name__}"):
            draw()
st.page_link(ui.DATA, label="Try it on data: go to Data", icon=":material/table:")
state.remember()  # a reload of this browser finds the data and choices again
