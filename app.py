"""dmlcore dashboard: entry point and navigation.

Run with ``bash scripts/run.sh`` (or ``python -m streamlit run app.py``). The pages in ``pages/``
gather choices, call :mod:`dmlcore` and draw what comes back; shared Streamlit helpers live in
the ``dashboard`` package.
"""

import streamlit as st

from dashboard import state, teacher, ui

st.set_page_config(page_title="dmlcore · DML-CMR dashboard", page_icon=":material/query_stats:",
                   layout="wide")
state.init()
ui.projector_layout()   # a projector's 1,024 x 768 gets the width (dashboard/ui.py)
teacher.ensure_code()   # printed to the console the first time, without DMLCORE_TEACHER_CODE
with st.sidebar:
    state.keep_owner_in_browser()

PAGES = [
    st.Page(ui.HOME, title="Home", icon=":material/home:", default=True),
    st.Page(ui.LEARN, title="Learn", icon=":material/school:"),
    st.Page(ui.DATA, title="Data", icon=":material/table:"),
    st.Page(ui.ROLES, title="Roles", icon=":material/account_tree:"),
    st.Page(ui.ESTIMATORS, title="Estimators", icon=":material/tune:"),
    st.Page(ui.TRAIN, title="Train", icon=":material/model_training:"),
    st.Page(ui.RESULTS, title="Results", icon=":material/insights:"),
    st.Page(ui.STUDY, title="Study", icon=":material/stacked_bar_chart:"),
    st.Page(ui.CLASS, title="Class", icon=":material/groups:"),
]
page = st.navigation(PAGES, position="top")
st.session_state[state.PAGE_NOW] = page.title   # what a full run draws; a fragment rerun does not pass here
page.run()
ui.sidebar_status()   # after the page, so that it shows what the page just changed
