"""Learn, tab Confounding: OLS moves with the hidden shock, 2SLS does not."""

import streamlit as st

from dashboard import state
from dashboard.learn.common import chart, notebook_button, num
from dmlcore.teaching import figures, iv


@st.cache_data(show_spinner=False, max_entries=50)
def confounding_exp(pi: float, n: int):
    return iv.confounding(pi=pi, n=n)


def confounding_tab():
    st.markdown(
        "Simulated markets: price A = π·Z + (hidden shock part) + noise, sales Y = −1·A + (hidden shock part) + "
        "noise. **ρ** is the correlation between the noise of the price (what the instrument does not explain) "
        "and the noise of sales (what the price does not explain): how strongly the hidden shock drives both. "
        "At each ρ the experiment draws 200 data sets "
        "(the same random numbers at every ρ) and fits OLS (sales on price) and 2SLS (fuel cost as "
        "instrument).")
    c1, c2 = st.columns(2)
    pi = c1.select_slider("Instrument coefficient π", [0.25, 0.5, 1.0, 2.0], value=1.0, key=state.LEARN_CONF_PI,
                          persist_state="session")
    n = c2.select_slider("Rows per data set", [100, 500, 2000], value=500, key=state.LEARN_CONF_N, persist_state="session")
    exp = confounding_exp(float(pi), int(n))
    notebook_button("confounding", pi=float(pi), n=int(n))
    chart(figures.estimates_box(exp, "rho", x_title="confounding ρ",
                                          title="OLS and 2SLS over 200 simulated data sets at each ρ"),
                    key=state.LEARN_CONF_PLOT)
    s = exp.summary
    ols, tsls = s[s["estimator"] == "OLS"], s[s["estimator"] == "2SLS"]
    st.markdown(
        f"- **OLS moves with ρ**: its median is {num(ols['median'].iloc[0])} at ρ = {ols['rho'].iloc[0]:g} and "
        f"{num(ols['median'].iloc[-1])} at ρ = {ols['rho'].iloc[-1]:g} (truth {num(exp.truth)}). In large samples "
        f"it tends to −1 + ρ / (1 + π²) = {num(ols['large-sample value'].iloc[-1])} at "
        f"ρ = {ols['rho'].iloc[-1]:g}: "
        "the hidden shock raises price and sales together, and OLS reads that as a price effect.\n"
        f"- **2SLS does not**: its medians lie between {num(tsls['median'].min())} and {num(tsls['median'].max())} "
        "at every ρ. It uses only the price changes the fuel cost causes, which the shock does not touch.\n"
        f"- The price of that: 2SLS is noisier (standard deviation over the draws {num(tsls['sd'].mean(), 3)} "
        f"against {num(ols['sd'].mean(), 3)} for OLS); a weaker instrument (smaller π) makes it noisier still.")
    st.caption("In the tool, the method *Regression (ignores C)* is this OLS with a flexible learner: it is "
               "confounded in the same way (tab *Ticket demand*).")
