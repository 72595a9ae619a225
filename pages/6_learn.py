"""Learn: IV and proximal learning, why the naive plug-in is biased, cross-fitting, and an experiment."""

import time

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import state, ui
from dashboard.training import one_openmp_thread
from dashboard.diagram import causal_dot, moment_text
from dmlcore import plots
from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import bridge_curve, demand_f0
from dmlcore.diagnostics import first_stage
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.dml import make_folds
from dmlcore.runs import curve_band, fit_run

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

FAST_GB = dict(learner="gb", folds=3, n_draws=8, nuisance_params=dict(max_iter=60, learning_rate=0.2),
               f_params=dict(max_stages=60, learning_rate=0.2))
INPUTS = ["price", "time", "customer_type"]
BAND_STRENGTHS = (2.0, 1.0, 0.5, 0.25, 0.1)
BAND_RIDGE = 1e-6  # the spline penalty, held fixed so that only the instrument changes
SIEVE_GB = {**FAST_GB, "f_model": "sieve", "f_params": dict(ridge=BAND_RIDGE)}
ss = st.session_state


class _TrueDemand:
    """The true structural function of demand-iv, with the predict() of a fitted estimator."""

    def predict(self, frame):
        return np.asarray(demand_f0(frame["price"], frame["time"], frame["customer_type"]), dtype=float)


@st.cache_data(show_spinner=False, max_entries=200)
def experiment(strength: float, rho: float, n: int, seed: int, with_naive: bool) -> dict:
    """OLS, 2SLS and fast DML-CMR (and naive) on one simulated IV demand data set.

    Curves are average demand curves: the mean over the data's rows of f(price, time_i, type_i).
    """
    loaded = load_dataset("demand-iv", n=n, seed=seed, rho=rho, iv_strength=strength)
    data, truth = loaded.data, loaded.truth
    # OLS is 2SLS with every input instrumenting itself: E[Y - f(X) | X] = 0.
    ols_data = CausalData(data.table, "cmr", outcome="sales", inputs=INPUTS, conditioning=INPUTS, name="ols")
    fits = [("OLS (regression)", "ols", ols_data, {}), ("2SLS", "2sls", data, {}),
            ("DML-CMR (small boosting)", "dml-cmr", data, FAST_GB)]
    if with_naive:
        fits.append(("Naive plug-in (small boosting)", "naive", data, {k: v for k, v in FAST_GB.items() if k != "folds"}))
    grid = np.linspace(*np.quantile(data.table["price"], [0.02, 0.98]), 40)
    true_curve = bridge_curve(_TrueDemand(), data, grid)
    out = {}
    for name, key, d, kwargs in fits:
        run = fit_run(d, "2sls" if key == "ols" else key, truth=truth, **kwargs)
        curve = pd.DataFrame({"x": grid, "estimate": bridge_curve(run.estimator, data, grid),
                              "truth": true_curve, "group": "average over customers"})
        out[name] = {"key": key, "curve": curve, "mse": run.record["mse"], "seconds": run.record["seconds"],
                     "slope": (run.record.get("coefficients") or {}).get("price")}
    true_slope = float(np.polyfit(grid, true_curve, 1)[0])
    try:
        diag = first_stage(data, nonparametric=False)
    except DMLCoreError:
        diag = None
    return {"fits": out, "true_slope": true_slope, "first_stage": diag}


@st.cache_data(show_spinner=False, max_entries=200)
def band_fit(strength: float, rho: float, n: int, seed: int) -> dict:
    """Fast DML-CMR with the spline second stage on simulated IV demand: the average demand curve
    with its 95 % band, the band of f on the test grid (width, coverage) and the first-stage F."""
    loaded = load_dataset("demand-iv", n=n, seed=seed, rho=rho, iv_strength=strength)
    data = loaded.data
    run = fit_run(data, "dml-cmr", truth=loaded.truth, **SIEVE_GB)
    grid = np.linspace(*np.quantile(data.table["price"], [0.02, 0.98]), 40)
    frame = pd.DataFrame({"x": grid, "estimate": bridge_curve(run.estimator, data, grid),
                          "truth": bridge_curve(_TrueDemand(), data, grid), "group": "average over customers"})
    curve = curve_band(run.estimator, data, frame, treatment_values=grid)
    try:
        f_stat = first_stage(data, nonparametric=False)["treatments"]["price"]["f_stat"]
    except DMLCoreError:
        f_stat = float("nan")
    return {"curve": curve, "width": run.record["band_width"], "coverage": run.record["band_coverage"],
            "curve_width": float(np.mean(curve["upper"] - curve["lower"])), "f_stat": f_stat,
            "seconds": run.record["seconds"]}


def iv_tab():
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.markdown(
            "**The problem.** Airline ticket sales *Y* depend on the price *A*, but an unobserved "
            "demand shock *U* (a conference in town) raises both: a regression of sales on price "
            "mixes the effect of price with the effect of *U*.\n\n"
            "**An instrument** *Z* (the fuel price) helps when it\n"
            "1. moves the price (*relevance*),\n"
            "2. affects sales only through the price (*exclusion*), and\n"
            "3. shares no hidden cause with sales (*unconfoundedness*).\n\n"
            "With additive noise, Y = f(A, X) + e and E[e | Z, X] = 0, so averaging over what is "
            "left random given the instrument gives")
        st.latex(r"\mathbb{E}[Y \mid Z, X] = \mathbb{E}[f(A, X) \mid Z, X] = \int f(a, X)\, p(a \mid Z, X)\, da")
        st.markdown("Both sides can be learned from data: that is the conditional moment restriction")
        st.latex(moment_text("iv"))
        st.markdown("f is the **causal** function: f(a, x) is the expected outcome if we *set* the price to a.")
    with right:
        st.graphviz_chart(causal_dot("iv", {"outcome": "sales", "treatment": "price", "instrument": "fuel_price",
                                            "covariates": ["time", "customer_type"]}))
        st.caption("Dashed: the hidden confounder U, never observed.")


def pcl_tab():
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.markdown(
            "**Proximal causal learning** needs no instrument. Instead it uses two kinds of *proxies* of "
            "the hidden confounder U:\n"
            "- **treatment proxies** Z (fuel prices): related to U, may affect the treatment, not the outcome;\n"
            "- **outcome proxies** W (web page views): related to U, may affect the outcome, not the treatment.\n\n"
            "If the proxies carry enough information about U (completeness), a **bridge function** "
            "h(a, w) solves")
        st.latex(moment_text("pcl"))
        st.markdown(
            "h itself is not the effect: averaging it over the outcome proxy gives the causal curve "
            "E[Y | do(a)]. The estimators are the same as for IV; only the roles change: h takes "
            "(A, W), and the conditioning set is (A, Z).")
    with right:
        st.graphviz_chart(causal_dot("pcl", {"outcome": "sales", "treatment": "price",
                                             "treatment_proxy": ["fuel_price_1", "fuel_price_2"],
                                             "outcome_proxy": "views"}))


def score_tab():
    st.markdown(
        "Every estimator here works in two stages. The **first stage** learns nuisances: the "
        "conditional distribution of the treatment given C, which gives g(f, c) = E[f(X) | c], and, for "
        "DML-CMR, s(c) = E[Y | c]. The **second stage** fits f by minimizing a loss.")
    c1, c2 = st.columns(2, border=True)
    with c1:
        st.markdown("**Naive plug-in** (DeepIV, two-stage least squares in spirit)")
        st.latex(r"\ell_{\text{naive}}(f) = \big(Y - \hat g(f, c)\big)^2")
        st.markdown(
            "The first-stage estimate ĝ goes straight in. Its errors (from regularization, early "
            "stopping, or overfitting the same rows) shift the minimizer of the loss **at first order**: "
            "a first stage that is 10 % off gives an f that is off by about as much. The loss is not "
            "*Neyman orthogonal*: its derivative with respect to g at the truth is not zero.")
    with c2:
        st.markdown("**DML-CMR: the orthogonal score**")
        st.latex(r"\psi(f; s, g) = \big(\hat s(c) - \hat g(f, c)\big)^2")
        st.markdown(
            "At the truth s₀(c) = E[Y | c] = E[f₀(X) | c] = g₀(f₀, c), so the score's derivative with "
            "respect to the nuisances vanishes there: nuisance errors enter only **at second order** "
            "(as products of errors). Nuisances that converge faster than N^-1/4 then leave f "
            "converging at the parametric rate N^-1/2.")
    st.markdown(
        "**Cross-fitting** removes the other source of bias, overfitting: each row's score uses "
        "nuisances trained **without that row** (see the next tab). **CE-DML-CMR** keeps the orthogonal "
        "score but fits the nuisances once on all rows: cheaper, and often as good on low-dimensional data.")
    st.info("See it happen: in the *Experiment* tab, tick “also the naive plug-in”, or run the demo and "
            "compare DML-CMR with the naive plug-in on the Results page.", icon=":material/science:")


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


def experiment_panel():
    st.markdown(
        "Simulated ticket demand with a known causal function. Move the sliders: how do ordinary "
        "regression (OLS), linear 2SLS and a fast DML-CMR (small gradient-boosting learners, K = 3) react? "
        "The plot shows the **average demand curve**: expected sales if every customer were offered "
        "the same price.")
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
            result = experiment(float(strength), float(rho), int(n), int(seed), bool(with_naive))
    except DMLCoreError as err:
        st.error(str(err))
        return
    seconds = time.perf_counter() - start
    fits = result["fits"]
    named = [(name, fit["curve"]) for name, fit in fits.items()]
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.plotly_chart(plots.curve_figure(named, methods=[f["key"] for f in fits.values()], x_title="price",
                                           y_title="average sales", title="Average demand curve"),
                        key="exp_curves")
    with right:
        st.plotly_chart(plots.bar_figure(list(fits), [f["mse"] for f in fits.values()],
                                         keys=[f["key"] for f in fits.values()], y_title="MSE vs truth",
                                         title="Error of f on the test grid (lower is better)"), key="exp_mse")
        diag = result["first_stage"]
        if diag is not None:
            f_stat = diag["treatments"]["price"]["f_stat"]
            st.metric("First-stage F", f"{f_stat:,.1f}", delta="weak: below 10" if diag["weak"] else "strong",
                      delta_color="inverse" if diag["weak"] else "normal", delta_arrow="off")
    slope = {name: f["slope"] for name, f in fits.items() if f["slope"] is not None}
    st.markdown(
        f"**Price slope** of the average demand curve: truth {result['true_slope']:.2f}; "
        + ", ".join(f"{k} {v:.2f}" for k, v in slope.items()) + ".")
    notes = []
    if rho > 0.5:
        notes.append("With strong confounding, OLS mistakes the demand shock (which raises prices *and* sales) "
                     "for a price effect: its slope is far too flat. 2SLS uses only the price variation "
                     "caused by the fuel price, which is unrelated to the shock.")
    if strength < 0.3:
        notes.append("With a weak instrument little price variation is left for 2SLS and DML-CMR: estimates "
                     "get noisy and drift back towards OLS.")
    notes.append("The true f is nonlinear (price × customer type × season): the average curve is a line, "
                 "but f itself is not, so the linear models' MSE stays high while DML-CMR can fit the shape.")
    for note in notes:
        st.markdown(f"- {note}")
    st.caption(f"Answered in {seconds:.2f} s (settings seen before come from a cache).")
    bands_section(float(strength), float(rho), int(n), int(seed))


def bands_section(strength: float, rho: float, n: int, seed: int):
    """The 95 % band of DML-CMR with a spline second stage, at the sliders' settings and across
    instrument strengths."""
    st.markdown("#### Confidence bands and instrument strength")
    st.markdown(
        "With a **spline second stage** (“spline basis (sieve)” on *Estimators*) DML-CMR also gives a "
        "pointwise 95 % confidence band. Below: the same fast DML-CMR with that second stage, on the data "
        f"of the sliders above, and again at instrument strengths {', '.join(f'{v:g}' for v in BAND_STRENGTHS)}.")
    start = time.perf_counter()
    try:
        with st.spinner("Fitting the bands..."), one_openmp_thread():
            sweep = [band_fit(v, rho, n, seed) for v in BAND_STRENGTHS]
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
        BAND_STRENGTHS, [("mean width of the band of f", [r["width"] for r in sweep], None),
                         ("share of the true f inside it", [r["coverage"] for r in sweep], 0.95)],
        x_title="instrument strength", log_x=True, title="Across instrument strengths (same N, ρ, seed)",
        text=[f"first-stage F {r['f_stat']:,.1f}" for r in sweep]), key="exp_band_sweep")
    table = pd.DataFrame({"instrument strength": BAND_STRENGTHS,
                          "first-stage F": [r["f_stat"] for r in sweep],
                          "band width (f, test grid)": [r["width"] for r in sweep],
                          "coverage (f, test grid)": [r["coverage"] for r in sweep],
                          "band width (average curve)": [r["curve_width"] for r in sweep],
                          "fit seconds": [r["seconds"] for r in sweep]})
    st.dataframe(table, key="exp_band_table", hide_index=True,
                 column_config={name: st.column_config.NumberColumn(format=fmt) for name, fmt in (
                     ("first-stage F", "%.1f"), ("band width (f, test grid)", "%.1f"),
                     ("coverage (f, test grid)", "%.2f"), ("band width (average curve)", "%.1f"),
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
        f"The spline penalty is held fixed here (ridge {BAND_RIDGE:g}) so that only the instrument changes; "
        "on *Estimators* it is chosen by validation, which tends to penalise harder when the instrument is "
        "weak and so narrows the band by adding bias. Width and coverage are those of the band of f on the "
        "2,800-point test grid (outcome scale); the average curve's band is narrower because averaging over "
        "customers cancels noise. Coverage stays under 95 % mostly because f-hat is biased (docs/coverage.md). "
        f"Answered in {seconds:.2f} s; each fit's own time is in the table (settings seen before come "
        "from a cache).")


st.title("Learn")
tabs = st.tabs(["Instrumental variables", "Proximal learning", "Naive vs orthogonal score", "Cross-fitting",
                "Experiment"])
with tabs[0]:
    iv_tab()
with tabs[1]:
    pcl_tab()
with tabs[2]:
    score_tab()
with tabs[3]:
    crossfit_tab()
with tabs[4]:
    st.fragment(experiment_panel)()
st.page_link(ui.DATA, label="Try it on data: go to Data", icon=":material/table:")
state.remember()  # a browser reload (same ?owner=) finds the data and choices again
