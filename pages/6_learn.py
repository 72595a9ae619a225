"""Learn: IV and proximal learning taught with simulations; every statement is backed by one.

The experiments live in dmlcore.teaching (no Streamlit); this page draws them. Tabs track which
one is open and only the open tab computes anything.
"""

import time

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import state, ui
from dashboard.diagram import causal_dot, moment_text
from dashboard.training import one_openmp_thread
from dmlcore import plots
from dmlcore.diagnostics import LEE_T_TEST_F, STOCK_YOGO_SIZE_10, WEAK_F, strength_label
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.dml import make_folds
from dmlcore.learners import LEARNER_TITLES
from dmlcore.runs import METHOD_TITLES
from dmlcore.teaching import demand, figures, forbidden, iv, nuisance, proximal
from dmlcore.teaching.measured import measured

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

ss = st.session_state
TABS = ("Instrumental variables", "Confounding", "Weak instruments", "Invalid instruments", "Forbidden regression",
        "Proximal learning", "Orthogonal score", "Cross-fitting", "Ticket demand")


def num(x: float, digits: int = 2) -> str:
    """A number as the page writes it (a true minus sign)."""
    return f"{x:.{digits}f}".replace("-", "−")


def pct(x: float) -> str:
    return f"{100 * x:.0f} %"


# ------------------------------------------------------------------ cached experiments
@st.cache_data(show_spinner=False, max_entries=50)
def wald_exp(rho: float, seed: int):
    return iv.wald(rho=rho, seed=seed)


@st.cache_data(show_spinner=False, max_entries=50)
def late_exp(compliers: float, effect_always: float):
    return iv.late(compliers=compliers, always=(1 - compliers) / 2, effect_always=effect_always)


@st.cache_data(show_spinner=False, max_entries=50)
def confounding_exp(pi: float, n: int):
    return iv.confounding(pi=pi, n=n)


@st.cache_data(show_spinner=False, max_entries=50)
def weak_exp(instruments: int, rho: float):
    return iv.weak_instruments(instruments=instruments, rho=rho)


@st.cache_data(show_spinner=False, max_entries=50)
def exclusion_exp(pi: float):
    return iv.exclusion(pi=pi)


@st.cache_data(show_spinner=False, max_entries=50)
def forbidden_exp(sigma: float, n: int):
    return forbidden.forbidden_regression(sigma=sigma, n=n)


@st.cache_data(show_spinner=False, max_entries=50)
def proximal_exp(noise: float, kappa: float, n: int):
    return proximal.proximal(proxy_noise=noise, kappa=kappa, n=n)


@st.cache_resource
def shared_results() -> dict:
    """Results of the slow experiments, shared by every session of this server (a class sees a
    result the moment one student or the teacher has computed it)."""
    return {}


def slow(name: str, label: str, run):
    """A slow experiment: the shared result when there is one, else a button labelled ``label``
    that runs it (``run(progress)``) with a progress bar. Returns the result or None."""
    results = shared_results()
    if name in results:
        return results[name]
    if not st.button(label, key=f"learn_run_{name}", type="primary", icon=":material/play_arrow:"):
        return None
    bar = st.progress(0.0, text="Starting...")
    try:
        with one_openmp_thread():
            result = run(lambda fraction, text: bar.progress(min(1.0, fraction), text=text))
    except DMLCoreError as err:
        st.error(str(err))
        return None
    bar.empty()
    results[name] = result
    return result


def strength_metric(col, f_stat: float, n_instruments: int = 1, label: str = "First-stage F"):
    s = strength_label(f_stat, n_instruments)
    col.metric(label, f"{f_stat:,.1f}", delta=s.level, delta_color=ui.STRENGTH_COLORS[s.level], delta_arrow="off",
               help=s.text)


# ------------------------------------------------------------------ tabs
def notation():
    with st.expander("Notation on every page of this tool"):
        st.markdown(
            "- **Y** outcome (sales); **A** treatment (price); **X** observed covariates (season, customer "
            "type); **U** the hidden confounder, never in the data.\n"
            "- **Z**: in IV the *instrument*; in proximal learning the *treatment proxies* (the literature's "
            "letter: like an instrument they are conditioned on, unlike one they may share the cause U). "
            "**W**: the outcome proxies.\n"
            "- **C**: what the moment restriction conditions on: (Z, X) for IV, (A, Z, X) for proximal learning.\n"
            "- **f**: the causal (structural) function; in proximal learning the *bridge* h takes its place.")


def iv_tab():
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.markdown(
            "**The problem.** Ticket sales *Y* depend on the price *A*, but a hidden demand shock *U* (a "
            "conference in town) raises both: a regression of sales on price mixes the effect of the price "
            "with the effect of *U*.\n\n"
            "**An instrument** *Z* (the airline's fuel cost) identifies the effect when\n"
            "1. it moves the price (*relevance*; the data can check it: the first-stage F, tab *Weak instruments*),\n"
            "2. it affects sales only through the price (*exclusion*; tab *Invalid instruments*), and\n"
            "3. it is as good as randomly assigned: independent of *U* and of everything else that drives "
            "sales (*instrument independence*).\n\n"
            "The data cannot check 2 and 3; they must come from knowing how the instrument arises. With "
            "additive noise, Y = f(A, X) + e, assumptions 2 and 3 give E[e | Z, X] = 0, so averaging over "
            "what is left random given the instrument gives")
        st.latex(r"\mathbb{E}[Y \mid Z, X] = \mathbb{E}[f(A, X) \mid Z, X] = \int f(a, X)\, p(a \mid Z, X)\, da")
        st.markdown("Both sides can be learned from data: that is the conditional moment restriction")
        st.latex(moment_text("iv"))
        st.markdown(
            "*f* is the **causal** function: f(a, x) is the expected sales if we *set* the price to *a* for "
            "customers with covariates *x*. The equation pins *f* down only if the instrument moves the price "
            "in enough ways (*completeness*, the nonparametric form of relevance).")
    with right:
        st.graphviz_chart(causal_dot("iv", {"outcome": "sales", "treatment": "price", "instrument": "fuel_price",
                                            "covariates": ["time", "customer_type"]}))
        st.caption("Dashed: the hidden confounder U, never observed.")
    notation()
    wald_section()
    late_section()


def wald_section():
    st.markdown("#### The Wald estimator: one binary instrument")
    st.markdown(
        "A simulated market (effect of price on sales −1; hidden shock *U*; the instrument switches the fuel "
        "cost between two levels). With a binary instrument the effect is the **Wald ratio**: how much mean "
        "sales differ between the instrument's two groups, divided by how much mean prices differ.")
    c1, c2 = st.columns(2)
    rho = c1.slider("Confounding ρ", 0.0, 0.99, 0.9, 0.01, key="learn_wald_rho", persist_state="session",
                    help="How strongly the hidden shock U drives both price and sales.")
    seed = c2.number_input("Seed", 0, 10_000, 0, key="learn_wald_seed", persist_state="session")
    exp = wald_exp(float(rho), int(seed))
    st.plotly_chart(figures.wald_scatter(exp), key="learn_wald_plot")
    slopes = exp.summary.set_index("estimate")["slope"]
    (a0, y0), (a1, y1) = exp.params["means"]["off"], exp.params["means"]["on"]
    st.markdown(
        f"Wald ratio = ({num(y1)} − ({num(y0)})) / ({num(a1)} − ({num(a0)})) = **{num(slopes['Wald ratio'])}**; "
        f"2SLS with the same instrument gives the same number ({num(slopes['2SLS'])}). OLS, which uses all the "
        f"price variation including the part *U* drives, gives **{num(slopes['OLS'])}**. Truth: {num(exp.truth)}.")


def late_section():
    st.markdown("#### When the effect differs from person to person: LATE")
    st.markdown(
        "Card (1995; on *Data*) instruments schooling with growing up near a four-year college: a binary "
        "instrument. Take a binary treatment (college or not) whose effect differs across people. "
        "**Compliers** go to college only if one is near; **always-takers** go anyway; **never-takers** never "
        "go. If nobody does the opposite of what the instrument pushes (*monotonicity*), the Wald ratio "
        "estimates the average effect **among compliers**, the *local average treatment effect* (Imbens & "
        "Angrist 1994), not the average effect over everyone (ATE). With a treatment that takes many values, "
        "like years of schooling, 2SLS estimates a weighted average of the effects on those the instrument "
        "moves (Angrist & Imbens 1995).")
    c1, c2 = st.columns(2)
    compliers = c1.slider("Share of compliers", 0.1, 0.9, 0.4, 0.05, key="learn_late_share", persist_state="session",
                          help="The rest is split equally between always-takers and never-takers.")
    effect_always = c2.slider("Effect for always-takers (compliers: 1, never-takers: 0)", -2.0, 4.0, 3.0, 0.5,
                              key="learn_late_effect", persist_state="session")
    exp = late_exp(float(compliers), float(effect_always))
    med = exp.summary.set_index("estimator")
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("ATE (everyone)", num(exp.params["ate"]))
    c2.metric("LATE (compliers)", num(exp.params["late"]))
    c3.metric("Wald ratio, median", num(med.loc["Wald", "median"]),
              help=f"Middle half of {exp.params['draws']} simulations: [{num(med.loc['Wald', 'q25'])}, "
                   f"{num(med.loc['Wald', 'q75'])}].")
    c4.metric("Treated minus untreated", num(med.loc["treated minus untreated", "median"]))
    st.markdown(
        f"Over {exp.params['draws']} simulated samples of {exp.params['n']:,} people, the Wald ratio centres on "
        f"the compliers' effect ({num(med.loc['Wald', 'median'])} against LATE {num(exp.params['late'])}), "
        f"not on the ATE ({num(exp.params['ate'])}). Comparing treated with untreated people gives "
        f"{num(med.loc['treated minus untreated', 'median'])}: who takes the treatment depends on *U*. The "
        "tool's estimators assume additive noise (the same effect for everyone with the same inputs). With a "
        "binary treatment and a binary instrument their f(1) − f(0) solves the same two equations as the Wald "
        "ratio, so it estimates the same compliers' effect; with more values, what they estimate when effects "
        "differ is not covered by the paper's theory.")


def confounding_tab():
    st.markdown(
        "Simulated markets: price A = π·Z + (hidden shock part) + noise, sales Y = −1·A + (hidden shock part) + "
        "noise. **ρ** is the correlation between the noise of the price (what the instrument does not explain) "
        "and the noise of sales (what the price does not explain): how strongly the hidden shock drives both. "
        "At each ρ the experiment draws 200 data sets "
        "(the same random numbers at every ρ) and fits OLS (sales on price) and 2SLS (fuel cost as "
        "instrument).")
    c1, c2 = st.columns(2)
    pi = c1.select_slider("Instrument coefficient π", [0.25, 0.5, 1.0, 2.0], value=1.0, key="learn_conf_pi",
                          persist_state="session")
    n = c2.select_slider("Rows per data set", [100, 500, 2000], value=500, key="learn_conf_n", persist_state="session")
    exp = confounding_exp(float(pi), int(n))
    st.plotly_chart(figures.estimates_box(exp, "rho", x_title="confounding ρ",
                                          title="OLS and 2SLS over 200 simulated data sets at each ρ"),
                    key="learn_conf_plot")
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


def weak_tab():
    st.markdown(
        "The same markets with the confounding set by ρ, and an instrument made weaker and weaker. 500 data sets "
        "of 500 rows at each strength; the strength is named by the median first-stage F.")
    c1, c2 = st.columns(2)
    k = c1.radio("Instruments", [4, 1], horizontal=True, key="learn_weak_k", persist_state="session",
                 format_func=lambda v: f"{v} instrument{'s' if v > 1 else ''}",
                 help="Four weak instruments show the bias toward OLS; one instrument shows the unreliable "
                      "intervals (its 2SLS median stays close to the truth until F is very small).")
    rho = c2.slider("Confounding ρ", 0.0, 0.99, 0.9, 0.01, key="learn_weak_rho", persist_state="session")
    exp = weak_exp(int(k), float(rho))
    st.plotly_chart(figures.weak_figure(exp), key="learn_weak_plot")
    s = exp.summary
    table = pd.DataFrame({
        "median first-stage F": s["median F"], "label": s["strength"],
        "median 2SLS": s["median 2SLS"], "median OLS": s["median OLS"],
        "2SLS median bias / OLS's": s["relative median bias"],
        "usual 2SLS 95 % interval covers": s["2SLS interval coverage"],
        "Anderson-Rubin 95 % set covers": s["AR coverage"], "AR set unbounded": s["AR unbounded"]})
    st.dataframe(table, hide_index=True, key="learn_weak_table",
                 column_config={c: st.column_config.NumberColumn(format="%.2f") for c in table.columns if c != "label"})
    weakest, at10 = s.iloc[0], s.iloc[(s["median F"] - WEAK_F).abs().argmin()]
    lines = [
        f"At median F {num(at10['median F'], 1)}, 2SLS's median bias is {pct(at10['relative median bias'])} of "
        f"OLS's; at F {num(weakest['median F'], 1)} it is {pct(weakest['relative median bias'])}: as F falls, "
        "2SLS drifts toward OLS.",
        f"The usual 2SLS interval contains the truth in {pct(weakest['2SLS interval coverage'])} of the draws at "
        f"F {num(weakest['median F'], 1)} and {pct(s['2SLS interval coverage'].iloc[-1])} at F "
        f"{num(s['median F'].iloc[-1], 1)}; the **Anderson-Rubin** set in "
        + (f"{pct(s['AR coverage'].min())}" if pct(s['AR coverage'].min()) == pct(s['AR coverage'].max()) else
           f"{pct(s['AR coverage'].min())} to {pct(s['AR coverage'].max())}")
        + f" at every strength. It stays honest by growing: at F "
        f"{num(weakest['median F'], 1)} it is unbounded in {pct(weakest['AR unbounded'])} of the draws: the data "
        "cannot rule out arbitrarily large effects.",
    ]
    if k == 1:
        lines.append("With one instrument the 2SLS median stays near the truth until F is very small, but its "
                     "spread explodes and the usual interval is too narrow: the bias toward OLS shows most with "
                     "several instruments (choose 4).")
    st.markdown("\n".join(f"- {line}" for line in lines))
    st.markdown("#### Thresholds for the first-stage F, with their sources")
    st.dataframe(pd.DataFrame([
        {"first-stage F above": f"{WEAK_F:g}", "what it buys": "rule of thumb: the instrument is not weak",
         "source": "Staiger & Stock (1997)"},
        {"first-stage F above": " / ".join(f"{v:.2f}" for v in STOCK_YOGO_SIZE_10.values())
         + " (1 / 2 / 3 / 4 instruments)",
         "what it buys": "a nominal 5 % 2SLS test rejects a true value at most 10 % of the time",
         "source": "Stock & Yogo (2005), critical values for one treatment"},
        {"first-stage F above": f"{LEE_T_TEST_F:g}", "what it buys": "the usual 5 % t-test of 2SLS has size 5 % "
         "(one instrument)", "source": "Lee, McCrary, Moreira & Porter (2022)"},
    ]), hide_index=True, key="learn_thresholds")
    st.caption(f"The labels used everywhere in this tool (Roles, this page, the command line's warning): **weak** "
               f"below {WEAK_F:g}, **moderate** from {WEAK_F:g} to {LEE_T_TEST_F:g}, **strong** above.")
    choice = st.select_slider("Intervals of single data sets at strength", list(s["expected F"]),
                              value=s["expected F"].iloc[1], key="learn_weak_pick", persist_state="session",
                              format_func=lambda v: f"F≈{s.set_index('expected F').loc[v, 'median F']:.3g}")
    st.plotly_chart(figures.intervals_figure(exp, float(choice)), key="learn_weak_intervals")


def exclusion_tab():
    st.markdown(
        "Now the fuel cost also moves sales **directly** by δ (say it signals the airline's finances to "
        "customers): the exclusion restriction fails. 200 data sets of 500 rows at each δ, confounding ρ = 0.5.")
    pi = st.slider("Instrument coefficient π (how much the fuel cost moves the price)", 0.2, 1.0, 0.5, 0.1,
                   key="learn_excl_pi", persist_state="session")
    exp = exclusion_exp(float(pi))
    st.plotly_chart(figures.estimates_box(exp, "direct effect", x_title="direct effect δ of the instrument on sales",
                                          title="2SLS and OLS when the instrument is invalid"), key="learn_excl_plot")
    s = exp.summary
    tsls, ols = s[s["estimator"] == "2SLS"], s[s["estimator"] == "OLS"]
    mid = tsls.iloc[len(tsls) // 2]
    worse = [d for d, a, b in zip(tsls["direct effect"], tsls["median"], ols["median"])
             if abs(a - exp.truth) > abs(b - exp.truth)]
    st.markdown(
        f"2SLS tends to −1 + δ / π: the direct effect is divided by the instrument's effect on the price. At "
        f"δ = {mid['direct effect']:g} and π = {pi:g} the formula gives {num(mid['large-sample value'])}; the "
        f"simulated median is {num(mid['median'])}. The weaker the instrument, the more a small violation is "
        "magnified. "
        + (f"From δ = {min(worse):g} on, 2SLS is further from the truth than OLS. " if worse else "")
        + "No statistic can reveal the violation with one instrument: the first-stage F does not involve sales "
          "at all. Exclusion has to be argued from how the instrument works.")


def steep(ratio: float) -> str:
    """A curve's slope relative to the truth's, in words."""
    return f"{ratio:.2f} times as steep as the truth" if ratio >= 1 else f"{ratio:.2f} times as steep (flatter)"


def forbidden_tab():
    st.markdown(
        "With a nonlinear f, replacing the price by its prediction from the instrument and fitting f to "
        "that — the *forbidden regression* — is wrong, because E[f(A) | Z] is not f(E[A | Z]). Here "
        "f(a) = 2 sin(a) and, given the instrument, the price is normal with spread σ, so "
        "E[f(A) | Z] = e^(−σ²/2) · f(Z): the instrument sees a flattened copy of f. Three fits of the same "
        "degree-5 polynomial on the same data (30 data sets; hidden confounding):")
    c1, c2 = st.columns(2)
    sigma = c1.slider("Spread σ of the price given the instrument", 0.3, 1.5, 0.8, 0.1, key="learn_forb_sigma",
                      persist_state="session")
    n = c2.select_slider("Rows per data set", [500, 1000, 2000], value=1000, key="learn_forb_n",
                         persist_state="session")
    exp = forbidden_exp(float(sigma), int(n))
    st.plotly_chart(figures.forbidden_figure(exp), key="learn_forb_plot")
    s = exp.summary.set_index("method")
    st.markdown(
        f"- **Regression** of sales on the polynomial of the price: MSE {num(s.loc['regression', 'mse'], 3)}; its "
        f"median curve is {steep(s.loc['regression', 'slope ratio'])}: confounded by the hidden shock.\n"
        f"- **Forbidden**: first predict the price from the instrument, then fit the polynomial to the predicted "
        f"price: MSE {num(s.loc['forbidden', 'mse'], 3)}; its median curve is "
        f"{steep(s.loc['forbidden', 'slope ratio'])}; in large samples it converges to the flattened "
        f"{num(exp.params['flattening'])} × f (dotted).\n"
        f"- **Two-stage, right**: fit the polynomial *averaged over draws of the price given the instrument*, "
        f"E[f(A) | Z]: MSE {num(s.loc['two-stage', 'mse'], 3)}.\n\n"
        "DML-CMR, CE-DML-CMR and the naive plug-in average f over draws from the estimated distribution of the "
        "price given C; sieve 2SLS regresses f's basis functions on the instruments'. Both estimate E[f(A) | C], "
        "the right way. Linear 2SLS may plug in the predicted price because for a linear f the two coincide.")
    st.caption("MSE: mean squared error of the curve on the grid shown, averaged over the data sets.")


def pcl_tab():
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.markdown(
            "**Proximal causal learning** needs no instrument. It uses two kinds of *proxies* of the hidden "
            "confounder U:\n"
            "- **treatment proxies** Z (fuel prices): related to U; they may affect the treatment but not the "
            "outcome — Z is independent of Y given A, U and X;\n"
            "- **outcome proxies** W (web page views): related to U; they may affect the outcome, but neither "
            "the treatment nor Z may affect them — W is independent of (A, Z) given U and X.\n\n"
            "If, in addition, the proxies vary enough with U (*completeness* conditions), a **bridge function** "
            "h(a, w, x) solving")
        st.latex(r"\mathbb{E}[\,Y - h(A, W, X) \mid A, Z, X\,] = 0")
        st.markdown("exists, and averaging it over the outcome proxy gives the causal curve")
        st.latex(r"\mathbb{E}[Y \mid do(a)] = \mathbb{E}_{W, X}[h(a, W, X)]")
        st.markdown(
            "The proxies "
            "identify that average even when they do not pin down h itself: several h may solve the equation, "
            "and all of them give the same average. The estimators are those "
            "of IV; only the roles change: h takes (A, W, X), and the conditioning set is (A, Z, X).")
    with right:
        st.graphviz_chart(causal_dot("pcl", {"outcome": "sales", "treatment": "price",
                                             "treatment_proxy": ["fuel_price_1", "fuel_price_2"],
                                             "outcome_proxy": "views"}))
    st.markdown("#### Experiment: what the proxies buy")
    st.markdown(
        "A linear market: U hidden; Z = U + noise; price A = U + 0.5 Z + noise; W = U + noise + κ·A; sales "
        "Y = −1·A + 2·U + noise. With κ = 0 the bridge h(a, w) = −a + 2w solves the equation, and *proximal "
        "2SLS* (regress Y on A and W, instrumenting W with Z) estimates the effect −1. 200 data sets.")
    c1, c2, c3 = st.columns(3)
    noise = c1.slider("Proxy noise s", 0.0, 2.0, 1.0, 0.1, key="learn_pcl_noise", persist_state="session",
                      help="Standard deviation of the proxies' own noise: 0 means W and Z measure U exactly.")
    kappa = c2.slider("Effect κ of the price on the outcome proxy", -0.5, 0.5, 0.0, 0.05, key="learn_pcl_kappa",
                      persist_state="session", help="Not zero: the outcome proxy is affected by the treatment, "
                                                    "which the method forbids.")
    n = c3.select_slider("Rows per data set", [500, 1000, 2000], value=1000, key="learn_pcl_n", persist_state="session")
    exp = proximal_exp(float(noise), float(kappa), int(n))
    st.plotly_chart(figures.estimates_box(exp, None, x_title="", title="Estimates of the effect of price (truth −1)"),
                    key="learn_pcl_plot")
    s = exp.summary.set_index("estimator")
    iqr = s["q75"] - s["q25"]
    lines = [
        f"**Y on A**: median {num(s.loc['Y on A', 'median'])}: confounded by U.",
        f"**Y on A and W** (treating the proxy as if it were U): {num(s.loc['Y on A and W', 'median'])}: a noisy "
        "proxy removes only part of the bias (all of it only when s = 0).",
        f"**Proximal 2SLS**: {num(s.loc['proximal 2SLS', 'median'])}; the middle half of the draws spans "
        f"{num(iqr['proximal 2SLS'])}.",
        "**Z dropped** (replaced by noise unrelated to U): median "
        f"{num(s.loc['proximal 2SLS, Z dropped (noise)', 'median'])}, "
        f"middle half spread over {num(iqr['proximal 2SLS, Z dropped (noise)'])}: with one kind of proxy the bridge "
        "is not identified; all that is left is the biased Y on A and W.",
    ]
    if kappa != 0:
        lines.append(f"With κ = {kappa:g}, the outcome proxy carries the price's effect, and proximal 2SLS tends to "
                     f"−1 − 2κ = {num(exp.params['predicted'])} (measured median "
                     f"{num(s.loc['proximal 2SLS', 'median'])}): the assumption matters.")
    st.markdown("\n".join(f"- {line}" for line in lines))


def score_tab():
    st.markdown(
        "Every estimator of this tool works in two stages. The **first stage** learns nuisances: the "
        "conditional distribution of f's inputs given C, which gives g(f, c) = E[f(A, X) | C = c] by averaging "
        "over draws, and, for DML-CMR and CE-DML-CMR, s(c) = E[Y | C = c]. The **second stage** fits f by "
        "minimizing an average loss.")
    c1, c2 = st.columns(2, border=True)
    with c1:
        st.markdown("**Naive plug-in** (DeepIV-style)")
        st.latex(r"\ell(f) = \big(Y - \hat g(f, C)\big)^2")
    with c2:
        st.markdown("**DML-CMR and CE-DML-CMR** (the paper's score)")
        st.latex(r"\psi(f) = \big(\hat s(C) - \hat g(f, C)\big)^2")
    st.markdown(
        "**In the code the two differ only in the target**: y_i for the naive plug-in, ŝ(c_i) for CE-DML-CMR; "
        "the draws that give ĝ are the same (same sampler, same seed). An error in ĝ therefore reaches both.\n\n"
        "**What is orthogonal, and what is not.**\n"
        "- In the population the two losses differ by a constant: E[(Y − g(f, C))²] = E[(Y − s₀(C))²] + "
        "E[(s₀(C) − g(f, C))²]. They have the same minimizer, whatever g is.\n"
        "- The derivative of the naive loss with respect to g at the truth is **zero**, by iterated expectations "
        "(E[(Y − s₀(C)) Δ(C)] = 0 for any function Δ of C). The paper's argument that the naive loss is not "
        "orthogonal because this derivative is not zero does not hold.\n"
        "- What the paper's score has is a **value** of zero at the truth: s₀(c) = g₀(f₀, c) for every c, so "
        "small errors in s and g change the loss at f₀ only at second order.\n"
        "- What the theory of double machine learning (Chernozhukov et al. 2018) needs is different: the "
        "**first-order condition** that defines f̂ — the derivative of the loss in f — must not move, to first "
        "order, when the nuisances are slightly wrong. For ψ it moves: an error δ(c) in ŝ shifts the condition "
        "in a direction h by −2 E[δ(C) g(h, C)], which is not zero in general; an error in ĝ shifts it too. "
        "The experiment below measures how far f̂ moves.\n"
        "- The paper's rate N^(−1/2) is proven for an f with finitely many parameters; a nonparametric f "
        "converges more slowly.")
    st.markdown("#### Experiment: perturb the nuisances by a known amount")
    st.markdown(
        "On simulated data with f(a) = 2 sin(a) (tab *Forbidden regression*): CE-DML-CMR and DML-CMR are fitted "
        "with small gradient-boosting nuisances (the naive plug-in uses CE-DML-CMR's draws with y as target, as "
        "the tool does). Then one nuisance is made wrong by a known ε and the second stage is refitted, in closed "
        "form (f a degree-5 polynomial), so that only the nuisance changes: ŝ plus ε·sd(Y)·δ(c) with δ the "
        "standardized instrument; the price draws shifted by ε·sd(price); or spread (1 + ε) times wider. "
        "5 data sets of 1,000 rows; about 6 s on 2 cores with other work running.")
    exp = slow("orthogonality", "Run the perturbation experiment", lambda cb: nuisance.orthogonality(callback=cb))
    if exp is None:
        return
    st.plotly_chart(figures.orthogonality_figure(exp), key="learn_orth_plot")
    s = exp.summary
    at = {e: s[np.isclose(s["eps"], e)].set_index(["perturbation", "method"]) for e in (0.0, 0.1, 0.2)}
    base = at[0.0]["rmse"].xs("s")
    order = s.groupby(["perturbation", "method"])["order"].first()
    ch1, ch2 = at[0.1]["change"], at[0.2]["change"]
    first = {key: value < 1.5 for key, value in order.items() if np.isfinite(value)}  # naive has no s-hat
    kind = {True: "a **first-order** effect", False: "a **second-order** effect"}
    g_first = all(first[(k, m)] for k in ("shift", "widen") for m in nuisance.METHODS)
    st.markdown(
        f"- **An error in ŝ**: at ε = 0.1 f̂ of CE-DML-CMR moves by {num(ch1['s', 'ce-dml-cmr'])} (root mean "
        f"square over the grid) and of DML-CMR by {num(ch1['s', 'dml-cmr'])}; at ε = 0.2 by "
        f"{num(ch2['s', 'ce-dml-cmr'])} and {num(ch2['s', 'dml-cmr'])}: "
        f"{num(ch2['s', 'dml-cmr'] / ch1['s', 'dml-cmr'], 1)} times as much, {kind[first['s', 'dml-cmr']]} "
        f"(estimated order {num(order['s', 'dml-cmr'], 1)}: 1 is first order, 2 second order). The naive "
        "plug-in has no ŝ and does not move.\n"
        f"- **An error in ĝ**: shifting the price draws by 0.1 sd moves f̂ by {num(ch1['shift', 'naive'])} "
        f"(naive), {num(ch1['shift', 'ce-dml-cmr'])} (CE-DML-CMR), {num(ch1['shift', 'dml-cmr'])} (DML-CMR); "
        f"widening them by 10 % by {num(ch1['widen', 'naive'])}, {num(ch1['widen', 'ce-dml-cmr'])}, "
        f"{num(ch1['widen', 'dml-cmr'])}. Estimated orders for DML-CMR {num(order['shift', 'dml-cmr'], 1)} and "
        f"{num(order['widen', 'dml-cmr'], 1)}"
        + (": first order for every method.\n" if g_first else ".\n")
        + f"- With the nuisances as fitted (ε = 0) the errors are {num(base['naive'])} (naive), "
        f"{num(base['ce-dml-cmr'])} (CE-DML-CMR) and {num(base['dml-cmr'])} (DML-CMR).")
    if all(first.values()):
        st.markdown(
            "**What this teaches**: in this tool no method's f̂ is protected against nuisance errors to first "
            "order, the orthogonal score included. What the score's target changes is the noise: ŝ averages the "
            "outcome noise before the second stage, y carries all of it. What cross-fitting changes is in the "
            "next tab.")
    else:
        st.markdown("**What this teaches**: the curves above differ in order between methods or errors; read "
                    "each panel's slope near ε = 0.")
    st.caption(f"Computed in {exp.seconds:.0f} s; shared with everyone using this server until it restarts.")


def crossfit_tab():
    data = state.causal()
    k = int(ss.get("est_folds", 10))
    seed = int(ss.get("est_seed", 0))
    if data is not None:
        n, source = len(data.table), f"your data ({state.dataset().name}, {len(data.table):,} rows)"
    else:
        n, source = 2000, "2,000 example rows (load data to see your own)"
    folds = make_folds(n, k, seed)
    st.markdown(
        f"With **K = {k}** folds and seed {seed} (set on *Estimators*) on {source}, DML-CMR splits the rows "
        f"at random into {k} folds. For each fold k it trains the nuisances s_k and g_k on the **other** "
        f"{k - 1} folds (blue), then uses them only on fold k's own rows (orange) in the second stage. "
        "Every row is held out exactly once, so the second stage sees all N rows, each scored by "
        "nuisances that never saw it. These are exactly the folds dmlcore uses for this N, K and seed.")
    st.plotly_chart(plots.folds_figure(folds, n), key="learn_folds")
    table = pd.DataFrame({"fold": range(k), "held-out rows (scored)": [len(f) for f in folds],
                          "rows training s_k and g_k": [n - len(f) for f in folds],
                          "first held-out rows": [", ".join(map(str, f[:6])) + " …" for f in folds]})
    st.dataframe(table, hide_index=True, key="learn_fold_table")
    st.caption("CE-DML-CMR and the naive plug-in skip this: one nuisance model, trained on all rows, "
               "scores the same rows it was trained on.")
    st.markdown("#### Naive plug-in, CE-DML-CMR and DML-CMR over many data sets")
    st.markdown(
        "Why hold rows out? A nuisance model that **overfits** predicts its own training rows too well: ŝ(c_i) "
        "and the price draws for row i carry that row's own noise, including the part the hidden U drives, "
        "into the second stage, and f̂ drifts toward the confounded regression. Cross-fitting scores each row "
        "with models that never saw it. The experiment fits the three methods with the same learners on the "
        "same simulated data sets (f(a) = 2 sin(a); second stage: splines, penalty chosen on validation rows).")
    c1, c2 = st.columns([3, 1])
    setting = c1.radio("Setting", list(nuisance.SETTINGS), key="learn_cmp_setting", persist_state="session",
                       format_func=lambda key: nuisance.SETTINGS[key].title)
    draws = c2.select_slider("Data sets", [5, 10, 20, 50], value=20, key="learn_cmp_draws", persist_state="session")
    st.caption("About 0.6 s per data set for the first setting and 2.5 s for the second, measured on 2 cores "
               "with other work running.")
    exp = slow(f"compare-{setting}-{draws}", "Run the comparison",
               lambda cb: nuisance.compare_methods(setting, draws=int(draws), callback=cb))
    if exp is not None:
        left, right = st.columns([3, 2], gap="large")
        with left:
            st.plotly_chart(figures.methods_box(exp), key="learn_cmp_plot")
        with right:
            s = exp.summary.set_index("method")
            st.dataframe(pd.DataFrame({"median MSE": s["median"], "q25": s["q25"], "q75": s["q75"],
                                       "lowest MSE on": s["lowest MSE on"]}).rename(index=METHOD_TITLES),
                         key="learn_cmp_table", column_config={c: st.column_config.NumberColumn(format="%.3g")
                                                               for c in ("median MSE", "q25", "q75")})
            best = s["median"].idxmin()
            st.markdown(
                f"Lowest median MSE: **{METHOD_TITLES[best]}** ({num(s.loc[best, 'median'], 3)}); DML-CMR had the "
                f"lowest MSE on {s.loc['dml-cmr', 'lowest MSE on']} of {exp.params['draws']} data sets. The naive "
                f"plug-in's middle half spans {num(s.loc['naive', 'q25'], 3)} to {num(s.loc['naive', 'q75'], 3)}, "
                f"DML-CMR's {num(s.loc['dml-cmr', 'q25'], 3)} to {num(s.loc['dml-cmr', 'q75'], 3)}. The naive "
                "target y carries all the outcome noise; ŝ averages it before the second stage.")
        st.caption(f"Computed in {exp.seconds:.0f} s; {exp.params['n']} rows per data set, K = {exp.params['folds']}.")
    measured_section()


def measured_section():
    st.markdown("#### Measured by this project on the paper's benchmarks")
    table = measured()
    if table.empty:
        st.caption("The benchmark rows (bench/results/) are not in this installation.")
        return
    st.dataframe(table, hide_index=True, key="learn_measured")
    lines = []
    for (bench, design, learners), part in table.groupby(["benchmark", "design", "learners"], sort=False):
        wins, seeds = int(part["naive wins"].sum()), int(part["paired seeds"].sum())
        where = f"{bench}" + (f" ({design} noise)" if design else "") + f", {LEARNER_TITLES.get(learners, learners)} learners"
        verdict = "beat" if 2 * wins > seeds else "lost to"
        lines.append(f"On **{where}** the naive plug-in {verdict} DML-CMR: it had the lower MSE on {wins} of "
                     f"{seeds} paired fits.")
    st.markdown(
        "Median MSE [quartiles] over seeds, the same data for every method (docs/benchmarks.md, raw rows in the "
        "files named). The paper reports DML-CMR ahead of DeepIV, a naive plug-in, on demand-iv (it runs no naive "
        "plug-in on demand-pcl); here is what this project measured:\n" + "\n".join(f"- {line}" for line in lines))
    if (table["design"] == "raw").any():
        st.caption("Raw noise: the appendix's outcome noise (standard deviation 1 in sales), under which the "
                   "hidden shock barely confounds; the tool now simulates demand-iv as the authors' code does "
                   "(tab *Ticket demand*), see docs/benchmarks.md for its measurements.")


def demand_tab():
    st.fragment(demand_experiment)()


@st.cache_data(show_spinner=False, max_entries=100)
def demand_fits(strength: float, rho: float, n: int, seed: int, with_naive: bool) -> dict:
    return demand.demand_fits(strength, rho, n, seed, with_naive)


def demand_experiment():
    st.markdown(
        "The paper's IV benchmark: simulated ticket demand (Hartford et al. 2017) where f is nonlinear in price, "
        "season and customer type, with the authors' noise, so the hidden shock really confounds. How do a "
        "regression that ignores the instrument, linear 2SLS and a fast DML-CMR (small gradient-boosting "
        "learners, K = 3) react? The plot shows the **average demand curve**: expected sales if every customer "
        "were offered the same price.")
    c1, c2, c3, c4 = st.columns(4)
    strength = c1.slider("Instrument strength", 0.0, 3.0, 1.0, 0.05, key="exp_strength", persist_state="session",
                         help="How much the fuel price moves the ticket price.")
    rho = c2.slider("Confounding ρ", 0.0, 0.99, 0.9, 0.01, key="exp_rho", persist_state="session",
                    help="How strongly the hidden demand shock drives both price and sales.")
    n = c3.select_slider("Rows", [500, 1000, 2000], value=1000, key="exp_n", persist_state="session")
    seed = c4.number_input("Seed", min_value=0, max_value=10_000, value=0, step=1, key="exp_seed",
                           persist_state="session")
    with_naive = st.checkbox("also the naive plug-in (same learners)", key="exp_naive", persist_state="session")
    start = time.perf_counter()
    try:
        with st.spinner("Fitting..."), one_openmp_thread():
            result = demand_fits(float(strength), float(rho), int(n), int(seed), bool(with_naive))
    except DMLCoreError as err:
        st.error(str(err))
        return
    seconds = time.perf_counter() - start
    fits = result["fits"]
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.plotly_chart(plots.curve_figure([(name, f["curve"]) for name, f in fits.items()],
                                           methods=[f["key"] for f in fits.values()], x_title="price",
                                           y_title="average sales", title="Average demand curve",
                                           lines_in_view=True), key="exp_curves")
    with right:
        st.plotly_chart(plots.bar_figure(list(fits), [f["mse"] for f in fits.values()],
                                         keys=[f["key"] for f in fits.values()], y_title="MSE vs truth",
                                         title="Error of f on the test grid (lower is better)"), key="exp_mse")
        strength_metric(st, result["f_stat"])
    st.markdown(f"**Price slope** of the average demand curve: truth {num(result['true_slope'], 1)}; "
                + ", ".join(f"{name} {num(f['slope'], 1)}" for name, f in fits.items()) + ".")
    label = strength_label(result["f_stat"])
    best = min(fits, key=lambda name: fits[name]["mse"])
    notes = [f"Instrument: {label.text}",
             f"Closest to the truth on the test grid: **{best}** (MSE {fits[best]['mse']:.3g}, with sales measured in "
             "units of 158 tickets, the benchmark's standardized sales)."]
    reg = fits[demand.REGRESSION]["slope"]
    notes.append(f"The regression's slope ({num(reg, 1)}) is {'above' if reg > result['true_slope'] else 'below'} "
                 f"the true {num(result['true_slope'], 1)}: set ρ = 0 and compare — what moves it is the hidden "
                 "shock.")
    for note in notes:
        st.markdown(f"- {note}")
    st.caption(f"Answered in {seconds:.2f} s (settings seen before come from a cache).")
    bands_section(float(strength), float(rho), int(n), int(seed))


@st.cache_data(show_spinner=False, max_entries=200)
def band_fit(strength: float, rho: float, n: int, seed: int) -> dict:
    return demand.band_fit(strength, rho, n, seed)


def bands_section(strength: float, rho: float, n: int, seed: int):
    """The 95 % band of DML-CMR with a spline second stage, at the sliders' settings and across
    instrument strengths."""
    st.markdown("#### Confidence bands and instrument strength")
    st.markdown(
        "With a **spline second stage** (“spline basis (sieve)” on *Estimators*) DML-CMR also gives a "
        "pointwise 95 % confidence band. Below: the same fast DML-CMR with that second stage, on the data "
        "of the sliders above, and again at instrument strengths "
        f"{', '.join(f'{v:g}' for v in demand.BAND_STRENGTHS)}.")
    start = time.perf_counter()
    try:
        with st.spinner("Fitting the bands..."), one_openmp_thread():
            sweep = [band_fit(v, rho, n, seed) for v in demand.BAND_STRENGTHS]
            current = band_fit(strength, rho, n, seed)
    except DMLCoreError as err:
        st.error(str(err))
        return
    seconds = time.perf_counter() - start
    st.plotly_chart(plots.curve_figure([("DML-CMR, spline f", current["curve"])], methods=["dml-cmr"],
                                       x_title="price", y_title="average sales",
                                       title=f"Average demand curve with its 95 % band (strength {strength:g})"),
                    key="exp_band_curve")
    st.plotly_chart(plots.sweep_figure(
        demand.BAND_STRENGTHS, [("mean width of the band of f", [r["width"] for r in sweep], None),
                         ("share of the true f inside it", [r["coverage"] for r in sweep], 0.95)],
        x_title="instrument strength", log_x=True, title="Across instrument strengths (same N, ρ, seed)",
        text=[f"first-stage F {r['f_stat']:,.1f}" for r in sweep]), key="exp_band_sweep")
    table = pd.DataFrame({"instrument strength": demand.BAND_STRENGTHS,
                          "first-stage F": [r["f_stat"] for r in sweep],
                          "label": [strength_label(r["f_stat"]).level for r in sweep],
                          "band width (f, test grid)": [r["width"] for r in sweep],
                          "coverage (f, test grid)": [r["coverage"] for r in sweep],
                          "band width (average curve)": [r["curve_width"] for r in sweep],
                          "fit seconds": [r["seconds"] for r in sweep]})
    st.dataframe(table, key="exp_band_table", hide_index=True,
                 column_config={name: st.column_config.NumberColumn(format=fmt) for name, fmt in (
                     ("first-stage F", "%.1f"), ("band width (f, test grid)", "%.3g"),
                     ("coverage (f, test grid)", "%.2f"), ("band width (average curve)", "%.3g"),
                     ("fit seconds", "%.2f"))})
    st.markdown(
        "**Why the band widens.** The second stage can learn f only from the part of the price that the "
        "instrument moves: it regresses ŝ(c) on the spline basis *averaged over the price draws given c*. "
        "With a strong instrument those averaged basis functions differ a lot from one fuel price to the "
        "next, and each coefficient is pinned down by its own pattern. As the instrument weakens it "
        "explains less and less of the price (the first-stage F falls), the price draws look alike whatever "
        "the fuel price, and the averaged basis functions become almost copies of one another: nearly "
        "collinear. Solving for the coefficients then amplifies every bit of noise, so their variance, "
        "and with it the band, grows.")
    st.caption(
        f"The spline penalty is held fixed here (ridge {demand.BAND_RIDGE:g}) so that only the instrument changes; "
        "on *Estimators* it is chosen by validation, so there the band's width also depends on the penalty "
        "chosen (a heavier penalty narrows it by adding bias). Width and coverage are those of the band of f on the "
        "2,800-point test grid (outcome scale); the average curve's band is narrower because averaging over "
        f"customers cancels noise. Here the bands contain the true f at {min(r['coverage'] for r in sweep):.0%} to "
        f"{max(r['coverage'] for r in sweep):.0%} of the grid points; docs/coverage.md has the coverage measured "
        f"over many simulations. Answered in {seconds:.2f} s; each fit's own time is in the table (settings seen "
        "before come from a cache).")


DRAW = (iv_tab, confounding_tab, weak_tab, exclusion_tab, forbidden_tab, pcl_tab, score_tab, crossfit_tab, demand_tab)

st.title("Learn")
st.caption("Each tab states what a simulation shows and shows it: the numbers in the text are computed from the "
           "experiments on the page. Only the open tab computes.")
for tab, draw in zip(st.tabs(TABS, key="learn_tab", on_change="rerun"), DRAW):
    if tab.open:
        with tab, ui.guarded(f"draw the lesson {draw.__name__}"):
            draw()
st.page_link(ui.DATA, label="Try it on data: go to Data", icon=":material/table:")
state.remember()  # a reload of this browser finds the data and choices again
