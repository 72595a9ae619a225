"""Learn, tab Weak instruments: 2SLS drifts toward OLS, its interval fails, Anderson-Rubin holds; LIML,
Fuller, CLR and tF beside them."""

import pandas as pd
import streamlit as st

from dashboard import state
from dashboard.learn.common import chart, cover, mc_se, notebook_button, num, pct
from dashboard.learn.robust import robust_section
from dmlcore.inference.first_stage import LEE_T_TEST_F, STOCK_YOGO_SIZE_10, WEAK_F, strong_bar
from dmlcore.teaching import figures, iv


@st.cache_data(show_spinner=False, max_entries=50)
def weak_exp(instruments: int, rho: float):
    return iv.weak_instruments(instruments=instruments, rho=rho)


def weak_tab():
    st.markdown(
        "The same markets with the confounding set by ρ, and an instrument made weaker and weaker. 500 data sets "
        "of 500 rows at each strength; the strength is named by the median first-stage F.")
    c1, c2 = st.columns(2)
    k = c1.radio("Instruments", [4, 1], horizontal=True, key=state.LEARN_WEAK_K, persist_state="session",
                 format_func=lambda v: f"{v} instrument{'s' if v > 1 else ''}",
                 help="Four weak instruments show the bias toward OLS; one instrument shows the unreliable "
                      "intervals (its 2SLS median stays close to the truth until F is very small).")
    rho = c2.slider("Confounding ρ", 0.0, 0.99, 0.9, 0.01, key=state.LEARN_WEAK_RHO, persist_state="session")
    exp = weak_exp(int(k), float(rho))
    notebook_button("weak", instruments=int(k), rho=float(rho))
    chart(figures.weak_figure(exp), key=state.LEARN_WEAK_PLOT)
    s = exp.summary
    draws = int(exp.params["draws"])
    # two narrow tables instead of one of eleven columns (a projector at 1,024 pixels shows them whole)
    estimates = pd.DataFrame({
        "median F": s["median F"], "label": s["strength"], "OLS": [num(v) for v in s["median OLS"]],
        **{name: [f"{num(v)} ({pct(b) if b >= 0 else '−' + pct(-b)})" for v, b in zip(s[f"median {name}"], s[bias])]
           for name, bias in (("2SLS", "relative median bias"), ("LIML", "LIML relative median bias"),
                              ("Fuller", "Fuller relative median bias"))}})
    st.markdown("**Medians of the estimates** over the draws (truth −1); in brackets, the median's distance from "
                "the truth as a share of OLS's")
    st.dataframe(estimates, hide_index=True, key=state.LEARN_WEAK_TABLE,
                 column_config={"median F": st.column_config.NumberColumn(format="%.1f")})
    coverage = {"median F": s["median F"]}
    for title, column in (("2SLS interval", "2SLS interval coverage"), ("Fuller interval", "Fuller interval coverage"),
                          ("AR set", "AR coverage"), ("CLR set", "CLR coverage"), ("tF interval", "tF coverage")):
        if s[column].notna().all():
            coverage[title] = [f"{100 * v:.1f} ({100 * mc_se(v, draws):.1f})" for v in s[column]]
    coverage["AR unbounded"] = [pct(v) for v in s["AR unbounded"]]
    coverage["AR empty"] = [pct(v) for v in s["AR empty"]]
    coverage = pd.DataFrame(coverage)
    st.markdown("**How often each 95 % interval or set contains the truth**, in % (in brackets its Monte-Carlo "
                "s.e., in percentage points)")
    st.dataframe(coverage, hide_index=True, key=state.LEARN_WEAK_COVERAGE,
                 column_config={"median F": st.column_config.NumberColumn(format="%.1f")})
    weakest, at10 = s.iloc[0], s.iloc[(s["median F"] - WEAK_F).abs().argmin()]
    lines = [
        f"At median F {num(at10['median F'], 1)}, 2SLS's median bias is {pct(at10['relative median bias'])} of "
        f"OLS's; at F {num(weakest['median F'], 1)} it is {pct(weakest['relative median bias'])}: as F falls, "
        "2SLS drifts toward OLS.",
        f"The usual 2SLS interval contains the truth in {cover(weakest['2SLS interval coverage'], draws)} of the "
        f"draws at F {num(weakest['median F'], 1)} and {cover(s['2SLS interval coverage'].iloc[-1], draws)} at F "
        f"{num(s['median F'].iloc[-1], 1)}; the **Anderson-Rubin** set in "
        + (f"{cover(s['AR coverage'].min(), draws)}" if pct(s['AR coverage'].min()) == pct(s['AR coverage'].max())
           else f"{pct(s['AR coverage'].min())} to {pct(s['AR coverage'].max())} (Monte-Carlo s.e. at most "
                f"{100 * max(mc_se(p, draws) for p in s['AR coverage']):.1f} %)")
        + " at every strength. That it is the same at every strength is **by construction, not a finding**: at "
        "the true effect, sales minus β × price does not involve the instrument's coefficient, and the experiment "
        "reuses the same random numbers at every strength, so the same draws are covered whatever the strength. "
        f"What the experiment does show is the level: {100 * s['AR coverage'].iloc[0]:.1f} % of "
        f"{draws} draws (Monte-Carlo s.e. {100 * mc_se(s['AR coverage'].iloc[0], draws):.1f} %), the AR test's "
        "exact 95 % (normal errors) up to simulation noise.",
        f"The AR set stays honest by growing: at F {num(weakest['median F'], 1)} it is unbounded in "
        f"{pct(weakest['AR unbounded'])} of the draws: the data cannot rule out arbitrarily large effects."
        + (f" With {k} instruments it can also be **empty** ({100 * s['AR empty'].max():.1f} % of the draws at "
           "most, here): no value of the effect passes the test. That reads as the data rejecting the model (an "
           "invalid instrument, a wrong linear model); here, where the model is right, it is a false alarm within "
           "the test's 5 %. An empty set counts as not covering."
           if s["AR empty"].max() > 0 else ""),
    ]
    lines.append(
        f"**LIML and Fuller**: at F {num(weakest['median F'], 1)} LIML's median bias is "
        f"{pct(abs(weakest['LIML relative median bias']))} of OLS's and Fuller's {pct(abs(weakest['Fuller relative median bias']))}"
        f" (2SLS: {pct(weakest['relative median bias'])}); "
        + ("with one instrument LIML is 2SLS. " if k == 1 else "LIML's median is, with several "
           "instruments, far less biased than 2SLS, but has no finite moments; Fuller (α = 1) has them, at some bias. ")
        + f"Their usual intervals are not weak-instrument robust either (Fuller's covers "
        f"{cover(weakest['Fuller interval coverage'], draws)} at the weakest strength).")
    lines.append(
        f"**CLR** (Moreira 2003) covers {pct(s['CLR coverage'].min())} to {pct(s['CLR coverage'].max())} at every "
        "strength, like AR; with several instruments it is the more powerful test (Andrews, Moreira & Stock 2006), "
        "so its sets are usually shorter (this experiment measures coverage, not length)"
        + (" (with one instrument it is the AR test itself, with a chi-square critical value)." if k == 1 else "."))
    if k == 1:
        lines.append(
            f"**tF** (Lee, McCrary, Moreira & Porter 2022) keeps 2SLS's interval but replaces 1.96 by a critical "
            f"value that grows as F falls: it covers {pct(s['tF coverage'].min())} to {pct(s['tF coverage'].max())} "
            "at every strength, at the price of wider intervals when F is below 104.7. It is for one instrument; "
            "the table above shows it only then.")
    if k == 1:
        lines.append("With one instrument the 2SLS median stays near the truth until F is very small, but its "
                     "spread explodes and the usual interval is too narrow: the bias toward OLS shows most with "
                     "several instruments (choose 4).")
    st.markdown("\n".join(f"- {line}" for line in lines))
    st.markdown("#### Thresholds for the first-stage F, with their sources")
    # a Markdown table: its long cells wrap instead of being cut at a projector's width
    sy = " / ".join(f"{v:.2f}" for v in STOCK_YOGO_SIZE_10.values())
    st.markdown(
        "| first-stage F above | what it buys | source |\n|---|---|---|\n"
        f"| {WEAK_F:g} | rule of thumb: the instrument is not weak | Staiger & Stock (1997) |\n"
        f"| {sy} (1 / 2 / 3 / 4 instruments) | a nominal 5 % 2SLS test rejects a true value at most 10 % of the "
        "time | Stock & Yogo (2005), critical values for one treatment |\n"
        f"| {LEE_T_TEST_F:g} | the usual 5 % t-test of 2SLS has size 5 % (one instrument; below it, tF's larger "
        "critical value keeps the size) | Lee, McCrary, Moreira & Porter (2022) |")
    bar, source, _, _ = strong_bar(int(k))
    st.caption(f"The labels used everywhere in this tool (Roles, this page, the command line's warning), with "
               f"{k} instrument{'s' if k > 1 else ''} and one treatment: **weak** below {WEAK_F:g}, **moderate** "
               f"from {WEAK_F:g} to {bar:g}, **strong** above ({source}).")
    choice = st.select_slider("Intervals of single data sets at strength", list(s["expected F"]),
                              value=s["expected F"].iloc[1], key=state.LEARN_WEAK_PICK, persist_state="session",
                              format_func=lambda v: f"F≈{s.set_index('expected F').loc[v, 'median F']:.3g}")
    chart(figures.intervals_figure(exp, float(choice)), key=state.LEARN_WEAK_INTERVALS)
    robust_section()
