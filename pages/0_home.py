"""Home: what the tool does, the one-click demo, and the way through the pages."""

import streamlit as st

from dashboard import state, training, ui
from dashboard.plan import DEMO_DATA

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

st.title("dmlcore: causal functions from conditional moment restrictions")
st.markdown(
    "Hidden confounders make a plain regression of an outcome *Y* on a treatment *A* misleading. "
    "An **instrument** *Z* still identifies the causal function *f* (covariates *X*), through the "
    "conditional moment restriction E[Y − f(A, X) | Z, X] = 0. Two kinds of **proxies** of the "
    "confounder (*Z* of the treatment, *W* of the outcome) define a *bridge function* h through "
    "E[Y − h(A, W, X) | A, Z, X] = 0; its average over *W* and *X* is the causal curve E[Y | do(a)], which "
    "the proxies identify even when h itself is not unique. "
    "This dashboard estimates them with **DML-CMR** (the paper's score, the squared difference "
    "(ŝ(c) − g(f, c))², with K-fold cross-fitting), its variant without cross-fitting **CE-DML-CMR**, the "
    "**naive two-stage plug-in**, a **regression** that ignores the instrument — these four with the same "
    "learners, so that the comparison is fair — and classical linear **2SLS**, which has no learners.")

c1, c2, c3 = st.columns(3, border=True)
with c1:
    st.markdown("**Teaching**  \nShow a class, with simulations, why regression fails under "
                "confounding, how an instrument or two proxies fix it, what weak or invalid instruments "
                "do, and what the orthogonal score and cross-fitting do and do not do.")
    st.page_link(ui.LEARN, label="Open Learn", icon=":material/school:")
with c2:
    st.markdown("**Your data**  \nUpload a CSV or Parquet file, assign the roles of the columns, "
                "check the instrument's strength and estimate the causal curve.")
with c3:
    st.markdown("**Research**  \nCompare estimators on simulations with a known truth: MSE, "
                "wall time and the fold-wise losses of every nuisance.")

st.subheader("One-click demo")
st.markdown(
    f"Simulates the IV ticket-demand data (Hartford et al. 2017: {DEMO_DATA['n']:,} rows, "
    f"confounding ρ = {DEMO_DATA['rho']}, fuel price as instrument), then fits **DML-CMR** "
    "(K = 5), the **naive plug-in** and a **regression** that ignores the instrument, all with "
    "gradient-boosting learners, and **2SLS**, in the background. Results follow within seconds "
    "for one user (within about two minutes when a class of 20 starts it together); you can watch "
    "the training meanwhile. Results then say which method came closest to the truth, and by how much. "
    "To be quick it skips the debiased effect: each method's effect is its plug-in (switch it on under "
    "Estimators and train again for the debiased effects, at two to three times the time).")
st.number_input("Data seed", min_value=0, max_value=1_000_000, value=DEMO_DATA["seed"], step=1, key=state.DEMO_SEED,
                help="Which simulated data set. In a class, each student types their own (a seat number): the "
                     "teacher's Class page pools everyone's results into one histogram per method.")
if st.button("Run the demo", key=state.DEMO_RUN, type="primary", icon=":material/play_arrow:"):
    with st.spinner("Simulating and queuing the fits..."):
        batch, ids, problems = training.start_demo()
    for problem in problems:
        st.error(problem)
    if ids:
        st.session_state[state.DEMO_GOTO_RESULTS] = batch   # Train moves to Results when it ends
        st.switch_page(ui.TRAIN)

st.subheader("Step by step")
steps = [
    (ui.DATA, "Data", "simulate, upload, or load Card / Mroz"),
    (ui.ROLES, "Roles", "choose the problem and what each column is"),
    (ui.ESTIMATORS, "Estimators", "methods, learners, K, seed, advanced settings"),
    (ui.TRAIN, "Train", "background fits with live progress and losses"),
    (ui.RESULTS, "Results", "curves against the truth, MSE, losses, downloads"),
]
for i, (path, title, what) in enumerate(steps, start=1):
    left, right = st.columns([1, 4])
    left.page_link(path, label=f"{i}. {title}")
    right.markdown(what)
state.remember()  # a reload of this browser finds the data and choices again
