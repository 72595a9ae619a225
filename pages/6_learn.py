"""Learn: IV and proximal learning taught with simulations.

Each tab is a module of :mod:`dashboard.learn`; the experiments live in dmlcore.teaching (no
Streamlit). Tabs track which one is open and only the open tab computes anything.
"""

import streamlit as st

from dashboard import state, ui
from dashboard.learn import card, confounding, crossfit, demand, exclusion, forbidden, iv, pliv, proximal, score, weak
from dashboard.learn.common import notation

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

TABS = (("Instrumental variables", iv.iv_tab), ("Confounding", confounding.confounding_tab),
        ("Weak instruments", weak.weak_tab), ("Invalid instruments", exclusion.exclusion_tab),
        ("Forbidden regression", forbidden.forbidden_tab), ("Proximal learning", proximal.pcl_tab),
        ("Orthogonal score", score.score_tab),
        ("Orthogonality that works", pliv.pliv_tab), ("Cross-fitting", crossfit.crossfit_tab),
        ("Ticket demand", demand.demand_tab), ("Card (1995): real data", card.card_tab))

st.title("Learn")
st.caption("Each tab states what a simulation shows and shows it: the numbers in the text are computed from the "
           "experiments on the page. Only the open tab computes. Statements that no experiment here checks are "
           "marked *not simulated here*.")
notation()
for tab, (_, draw) in zip(st.tabs([label for label, _ in TABS], key="learn_tab", on_change="rerun"), TABS):
    if tab.open:
        with tab, ui.guarded(f"draw the lesson {draw.__name__}"):
            draw()
st.page_link(ui.DATA, label="Try it on data: go to Data", icon=":material/table:")
state.remember()  # a reload of this browser finds the data and choices again
