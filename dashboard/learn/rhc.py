"""Learn, tab RHC: a proximal real-data exercise with its answers, the numbers computed here."""

import pandas as pd
import streamlit as st

from dashboard import state
from dashboard import ui
from dashboard.learn.card import answer
from dashboard.learn.common import notebook_button, num
from dmlcore.teaching import rhc


@st.cache_data(show_spinner="Computing the linear steps on 5,735 patients...")
def steps():
    return rhc.proxy_steps()


@st.cache_data(show_spinner=False)
def measured():
    return rhc.measured_effects()


def interval(e: dict) -> str:
    return f"{num(e['coef'])} [{num(e['lower'])}, {num(e['upper'])}]"


def rhc_tab():
    s = steps()
    notebook_button("rhc")
    z, w = (" and ".join(f"*{c}*" for c in cols) for cols in (s["treatment_proxies"], s["outcome_proxies"]))
    st.markdown(
        f"**The question.** Does right heart catheterization (RHC) in the first 24 hours in intensive care change "
        f"survival? The SUPPORT study's {s['n']:,} patients (Connors et al. 1996; {s['treated_share']:.0%} got RHC): "
        f"treatment A = *{s['treatment']}*, outcome Y = *{s['outcome']}*, days alive up to day 30, and "
        f"{s['covariates']} covariate columns X. The hidden U: how sick a patient really was, beyond what X records; "
        "sicker patients may be both catheterized more often and die sooner. The proxies, in the roles of Tchetgen "
        "Tchetgen et al. (2024) and Cui et al. (2023), are four physiological measurements taken at admission:\n"
        f"- treatment proxies Z = {z} (PaO₂/FiO₂ ratio, PaCO₂): may influence the decision to catheterize; "
        "they may be caused by U; assumed **independent of survival given A, U and X** (Z ⊥ Y | A, U, X);\n"
        f"- outcome proxies W = {w} (pH, haematocrit): may be related to survival; measured before the "
        "catheter, so A cannot affect them, and assumed unaffected by Z given U and X.\n\n"
        "Neither assumption can be checked from these columns: they are the analysts' clinical judgment. The data "
        "can be loaded on *Data* (real data: RHC) with these roles.")
    st.markdown("#### 1. How strong are the proxies?")
    strength = s["strength"]
    table = pd.DataFrame([{"outcome proxy W": name, "F of the treatment proxies (given A, X)": v["f_stat"],
                           "partial R²": v["partial_r2"]} for name, v in strength["per_proxy"].items()])
    st.dataframe(table, hide_index=True, key=state.LEARN_RHC_STRENGTH,
                 column_config={"F of the treatment proxies (given A, X)": st.column_config.NumberColumn(format="%.1f"),
                                "partial R²": st.column_config.NumberColumn(format="%.3f")})
    st.markdown(
        f"Each outcome proxy alone is predicted well by the treatment proxies, but the linear bridge has a "
        f"coefficient for each of the two W, and the two Z must move the two W in two different directions: the "
        f"Cragg–Donald F, which measures that, is **{strength['cragg_donald_f']:.1f}** ({strength['level']}).")
    answer("Both F statistics are above 10. Why is the bridge still weakly identified?",
           f"Because F per outcome proxy asks whether Z predicts that W, not whether Z moves the two W "
           f"independently. Here Z moves mostly the first W; the second gets little, and what it gets is nearly a "
           f"copy of the first's direction, so the Cragg–Donald F (a statistic built from the smallest canonical correlation between Z and W "
           f"given A and X) is "
           f"{strength['cragg_donald_f']:.1f}. The proximal 2SLS interval below is the usual one, not robust to "
           "weak identification: read it as too narrow.")
    st.markdown("#### 2. Estimates of the effect of RHC (days alive in 30)")
    rows = [("regression of Y on A and X (no unmeasured confounding assumed)", s["regression"]),
            ("the same with the four proxies added as covariates", s["regression_with_proxies"]),
            ("linear proximal 2SLS (Y on A, W, X; W instrumented by Z)", s["p2sls"]),
            ("proximal 2SLS with the proxies' roles swapped", s["p2sls_swapped"])]
    st.dataframe(pd.DataFrame([{"estimate": name, "ATE (days)": num(e["coef"]),
                                "95 % interval": f"[{num(e['lower'])}, {num(e['upper'])}]"} for name, e in rows]),
                 hide_index=True, key=state.LEARN_RHC_LINEAR,
                 column_config={"estimate": st.column_config.TextColumn(width="large")})
    answer("The regression says " + interval(s["regression"]) + ", proximal 2SLS " + interval(s["p2sls"])
           + ". What did the proxies change, and what does it rest on?",
           "The point estimate moves further from 0, but the regression's estimate lies inside the proximal "
           "interval, and that interval is itself too narrow with a Cragg–Donald F this low: the data do not "
           "tell whether the severity that X misses made RHC look more or less harmful. Adding the proxies as "
           "plain covariates moves the estimate little: a noisy proxy adjusts for only part of U (tab "
           "*Proximal learning*). The proximal estimate rests on the roles (Z without effect on survival, W "
           "unaffected by RHC), on the bridge being linear, and on the proxies being rich enough about U "
           "(completeness), none of which the data can check; and its interval is not weak-identification robust.")
    answer("Swap the roles of the proxies. What happens, and why may you not just pick the assignment that "
           "fits best?",
           f"The estimate becomes {interval(s['p2sls_swapped'])}: a different number with a much wider interval. "
           "The roles are different assumptions (which variables may affect the treatment, which may affect the "
           "outcome); swapping them asks different exclusions of the same variables, and the data cannot say "
           "which set is true. Choosing the roles by the result would be choosing the assumption by the answer.")
    st.markdown("#### 3. The nonparametric methods")
    table = measured()
    if table is None:
        st.caption("The project's fits on these data (bench/results/rhc-effects.csv, written by "
                   "`python -m bench.rhc_effects`) are not in this installation.")
        return
    st.markdown("Every method on the same data and roles, as the project measured them (`python -m "
                "bench.rhc_effects`; docs/coverage.md). The held-out score measures how well each fit meets the "
                "moment restriction on rows it never saw (lower is better).")
    # five columns: the interval and the held-out score with its s.e. each in one cell (whole at 1,024 pixels)
    shown = pd.DataFrame({"method": table["method"], "nuisances · second stage": table["nuisances"] + " · "
                          + table["second stage"], "ATE (days)": [num(v) for v in table["ATE (days)"]],
                          "95 % interval": [f"[{num(lo)}, {num(hi)}]" for lo, hi in zip(table["lower"], table["upper"])],
                          "held-out score (s.e.)": [f"{v:.3f}" + (f" ({s:.3f})" if pd.notna(s) else "") if pd.notna(v) else "—"
                                                    for v, s in zip(table["held-out score"], table["held-out s.e."])]})
    st.dataframe(shown, hide_index=True, key=state.LEARN_RHC_METHODS)
    flagged = rhc.flagged_today()
    if flagged:
        st.caption(f"Today the tool prints no interval for {', '.join(flagged)} on these data: refitted with the "
                   "current code (bench/results/rhc-effects-31.csv), they are flagged weakly identified (docs/"
                   "coverage.md, \"RHC: every method\"). The intervals of those methods above come from fits made "
                   "before the flag.")
    low, high = table["ATE (days)"].min(), table["ATE (days)"].max()
    flexible = table[~table["method"].isin([e.title for e in rhc.METHODS.values() if e.linear_iv])]["ATE (days)"]
    answer("The nonparametric methods say " + num(flexible.min()) + " to " + num(flexible.max()) + " days. Why do "
           "the estimates differ, and which would you report?",
           "They estimate the same ATE under the same roles, but with different bridges: a linear one (2SLS), "
           "splines, boosted trees; with different nuisances; and with penalties that pull flexible fits toward "
           "simpler ones. With a weakly identified bridge (Cragg–Donald F above) such choices move the estimate "
           "more than the intervals admit. The flexible fits meet the moment restriction better on new rows than "
           "linear 2SLS (held-out score), which is evidence against the linear bridge, not proof that their "
           "effect is closer: none of these intervals has measured coverage on a design like this (docs/"
           "coverage.md). Report the range with its reasons: "
           + (f"every method finds RHC shortened 30-day survival, by {num(-high)} to {num(-low)} days"
              if high < 0 else f"the estimates run from {num(low)} to {num(high)} days")
           + f", and {int((table['upper'] < 0).sum())} of {len(table)} intervals above exclude 0"
           + ("; for the methods the tool flags today, no interval should be reported." if flagged else "."))
    st.markdown("#### 4. What the published analyses found")
    st.markdown(
        "Tchetgen Tchetgen et al. (2024, *Statistical Science*, \"An introduction to proximal causal inference\") "
        "fit linear proximal 2SLS with these roles; Cui et al. (2023, *JASA*, \"Semiparametric proximal causal "
        "inference\") fit proximal outcome-regression, inverse-weighting (treatment bridge) and doubly robust "
        "estimators. As docs/coverage.md summarises them, both found that RHC reduced 30-day survival, by about "
        "one to two days (their tables could not be checked from this project, which quotes no single number "
        "of theirs; their covariate coding differs from this copy's, so compare directions and sizes, not "
        "decimals). Linear proximal 2SLS with 68 "
        "covariates coded as in the R package ATbounds gives −1.99 (s.e. 0.50; docs/coverage.md).")
    st.page_link(ui.DATA, label="Load RHC on Data and fit the methods yourself", icon=":material/table:")
