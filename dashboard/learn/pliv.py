"""Learn, tab Orthogonality that works: a partially linear IV model estimated with a naive and an
orthogonal score, with and without cross-fitting; the second-order positive control."""

import pandas as pd
import streamlit as st

from dashboard import state
from dashboard.learn.common import chart, cover, mc_se, notebook_button, num, short, slow
from dashboard.training import one_openmp_thread
from dmlcore.inference.effect_coverage import demand_contrast
from dmlcore.estimators._registry import PAPER_METHOD
from dmlcore.teaching import figures, nuisance, pliv

LIVE = dict(n=500, sims=100, folds=5)


@st.cache_data(show_spinner=False)
def shipped():
    return pliv.cached()


@st.cache_data(show_spinner=False)
def control():
    return pliv.second_order()


@st.cache_data(show_spinner=False)
def dml_cmr_s_line():
    """The change of DML-CMR's f-hat when s-hat is off by eps (the previous tab's perturbation,
    one small data set)."""
    with one_openmp_thread():
        exp = nuisance.orthogonality(n=500, seeds=1, epsilons=pliv.EPSILONS, folds=2)
    s = exp.summary
    return s[(s["perturbation"] == "s") & (s["method"] == PAPER_METHOD) & (s["eps"] > 0)]


def pliv_tab():
    st.markdown(
        "The previous tab showed what the paper's score does *not* protect. Here is a model where an "
        "orthogonal score does what the theory of double machine learning (Chernozhukov et al. 2018) "
        "promises: a **partially linear IV model** with one number to estimate, the effect θ = "
        f"{pliv.THETA:g} of a treatment A (the price), and nonlinear nuisances of covariates X "
        f"({pliv.P} correlated columns):")
    st.latex(r"Y = \theta A + q(X) + U,\qquad A = Z + \tanh(x_1) + V,\qquad Z = x_0 + E_Z")
    st.markdown(
        f"with q(x) = 3 sin(2x₀) + cos(x₁) and the hidden confounding corr(U, V) = {pliv.RHO:g}: a regression of Y "
        "on A is biased; Z is a valid instrument *given X*. Three nuisances are learned from X: "
        "ℓ(X) = E[Y | X], m(X) = E[A | X], r(X) = E[Z | X], each by k-nearest neighbours "
        f"(k = {pliv.NEIGHBOURS}), a smoother whose bias stands for any machine learner's regularization "
        "bias. Both estimators use the same fitted ℓ̂ and m̂ and differ only in what multiplies the residual:")
    c1, c2 = st.columns(2, border=True)
    with c1:
        st.markdown("**Naive score** (not orthogonal)")
        st.latex(r"\hat\theta = \frac{\sum_i Z_i\,(Y_i - \hat\ell(X_i))}{\sum_i Z_i\,(A_i - \hat m(X_i))}")
        st.caption("Its derivative in ℓ at the truth is −E[Z·Δ(X)] = −E[r(X)·Δ(X)] for an error Δ in ℓ: not zero, so "
                   "the learner's bias in ℓ̂ reaches θ̂ at first order.")
    with c2:
        st.markdown("**Orthogonal score** (DML for the partially linear IV model)")
        st.latex(r"\hat\theta = \frac{\sum_i (Z_i - \hat r(X_i))(Y_i - \hat\ell(X_i))}"
                 r"{\sum_i (Z_i - \hat r(X_i))(A_i - \hat m(X_i))}")
        st.caption("Its derivative in each of ℓ, m and r is zero at the truth: errors reach θ̂ only through "
                   "products such as E[(r̂ − r)(ℓ̂ − ℓ)].")
    st.markdown(
        "Each is computed **with cross-fitting** (5 folds: each row's nuisances come from models fitted on the "
        "other folds) and **without** (fitted on all rows, the row itself included), with the standard error of "
        "its score. If an estimator is centred and its standard error right, (θ̂ − θ)/se is approximately standard normal and "
        "the 95 % interval θ̂ ± 1.96·se contains θ in 95 % of the data sets.")
    histograms_section()
    second_order_section()
    demand_section()


def histograms_section():
    exp = shipped()
    notebook_button("pliv")
    st.markdown("#### Over many simulated data sets")
    if exp is None:
        st.caption("The shipped simulations (dmlcore/teaching/pliv.csv, written by `python -m bench.pliv`) are not in this "
                   "installation; run the small version below.")
    else:
        describe(exp, f"{exp.params['sims']:,} data sets of {exp.params['n']:,} rows (shipped in "
                      f"{exp.params['source']}, written by `python -m bench.pliv`)", state.LEARN_PLIV_PLOT)
    st.markdown(f"**Recompute a small version live**: {LIVE['sims']} new data sets of {LIVE['n']} rows "
                "(other random numbers; a few seconds).")
    live = slow("pliv-live", "Run the small version",
                lambda cb: pliv.simulations(**LIVE, seed=1, callback=cb))
    if live is not None:
        describe(live, f"{LIVE['sims']} data sets of {LIVE['n']} rows, computed on this server", state.LEARN_PLIV_LIVE)


def describe(exp, what: str, key: str):
    chart(figures.pliv_histograms(exp), key=key)
    s = exp.summary.set_index(["score", "cross-fitting"])
    table = pd.DataFrame({"score": [pliv.SCORE_TITLES[k[0]] for k in s.index],
                          "cross-fitting": ["yes" if k[1] else "no" for k in s.index],
                          "mean of (θ̂ − θ)/se": s["mean t"].to_numpy(), "sd of (θ̂ − θ)/se": s["sd t"].to_numpy(),
                          "95 % interval covers θ": s["coverage"].to_numpy(),
                          "median θ̂ − θ": s["median bias"].to_numpy(), "median se": s["median se"].to_numpy()})
    st.dataframe(table, hide_index=True, key=state.TABLE_OF(key), column_config={
        "cross-fitting": short("cross-fit", "cross-fitting"),
        "mean of (θ̂ − θ)/se": short("mean t", "mean of t = (θ̂ − θ)/se", "%.3f"),
        "sd of (θ̂ − θ)/se": short("sd t", "sd of t = (θ̂ − θ)/se", "%.3f"),
        "95 % interval covers θ": short("covers θ", "95 % interval covers θ", "%.3f"),
        "median θ̂ − θ": short("med. θ̂ − θ", "median θ̂ − θ", "%.3f"),
        "median se": short("med. se", "median se", "%.3f")})
    naive, orth = s.loc[("naive", True)], s.loc[("orthogonal", True)]
    naive0, orth0 = s.loc[("naive", False)], s.loc[("orthogonal", False)]
    sims = int(exp.params["sims"])
    st.markdown(
        f"- **{what}.** With cross-fitting the orthogonal score's interval covers θ in **{cover(orth['coverage'], sims)}** "
        f"of the data sets (its t centred at {num(orth['mean t'])}, spread {num(orth['sd t'])}); the naive "
        f"score's in **{cover(naive['coverage'], sims)}**: its t is centred at {num(naive['mean t'])}, the learner's "
        f"bias in ℓ̂ shifted θ̂ by {num(naive['median bias'], 3)} (median), about "
        f"{abs(naive['median bias']) / naive['median se']:.1f} standard errors.\n"
        f"- **Without cross-fitting**: orthogonal {cover(orth0['coverage'], sims)}, naive "
        f"{cover(naive0['coverage'], sims)}. "
        + ("Here cross-fitting changes little: the instrument's own noise is independent of the outcome's, and a "
           "k-NN fit that includes the row itself shrinks the residuals of the numerator and the denominator "
           "alike. " if abs(orth0["coverage"] - orth["coverage"]) <= 0.05 else
           "Here the orthogonal score's coverage differs by more than 5 points without cross-fitting. ")
        + "Where a nuisance's fit on its own rows carries the confounded noise into the second stage, "
          "cross-fitting matters (tab *Cross-fitting*).\n"
        f"- The naive t spreads by {num(naive['sd t'])}, not 1: its standard error is the one of its score with ℓ̂ "
        "and m̂ treated as known, and for a score that is not orthogonal the nuisances' own estimation error "
        "reaches θ̂ at first order, so that formula is not θ̂'s standard deviation"
        + (" (here it overstates it)." if naive["sd t"] < 1 else " (here it understates it).") + " The orthogonal "
        f"score's t spreads by {num(orth['sd t'])}: for it the formula is right to first order.\n"
        f"- The orthogonal score is not free of bias: its t is centred at {num(orth['mean t'])}, not 0, because "
        "the product of the errors in r̂ and ℓ̂ is not negligible at this sample size; the theory needs the "
        "nuisances to be learned fast enough (faster than N^(−1/4)) for that product to vanish.\n"
        f"- Each coverage was measured over {sims:,} data sets; its Monte-Carlo standard error is given beside it, "
        "so a run with other random numbers or another N (the small version below) differs by about that much "
        "or more.")


def second_order_section():
    st.markdown("#### A positive control for “second order”")
    exp = control()
    p = exp.params
    st.markdown(
        f"On one large simulated data set ({p['n']:,} rows) start from the **true** nuisances and add the same "
        "error ε·Δ(X) to each of ℓ, m and r (Δ: the standardized x₀ + sin(x₁)), then recompute θ̂. Below, "
        "how far θ̂ moves against ε on log–log axes: a straight line of slope 1 is a first-order effect, of "
        "slope 2 a second-order one. Beside them, the previous tab's error in ŝ of DML-CMR (on one data set of "
        "500 rows, fitted with small boosting nuisances): how far its f̂ moves (root mean square over the grid).")
    s_line = dml_cmr_s_line()
    t = exp.draws
    lines = [(f"orthogonal score (PLIV): slope {p['slopes']['orthogonal']:.2f}",
              t.loc[t["score"] == "orthogonal", "eps"], t.loc[t["score"] == "orthogonal", "change"], "dml-cmr"),
             (f"naive score (PLIV): slope {p['slopes']['naive']:.2f}",
              t.loc[t["score"] == "naive", "eps"], t.loc[t["score"] == "naive", "change"], "naive")]
    s_slope = pliv.loglog_slope(s_line["eps"], s_line["change"])
    lines.append((f"DML-CMR, error in ŝ (f̂ moves): slope {s_slope:.2f}", s_line["eps"], s_line["change"],
                  "ce-dml-cmr"))
    chart(figures.second_order_figure(lines), key=state.LEARN_SECOND_ORDER)
    orth = t[t["score"] == "orthogonal"].set_index("eps")["change"]
    first, last = orth.index[0], orth.index[-1]
    order = {score: "second order" if slope > 1.75 else "first order" if slope < 1.5 else "in between"
             for score, slope in p["slopes"].items()}
    text = (f"- **Orthogonal score**: slope {p['slopes']['orthogonal']:.2f}, measured: halving ε divides the change "
            f"by about {2 ** p['slopes']['orthogonal']:.1f} (from {orth[last]:.2g} at ε = {last:g} to "
            f"{orth[first]:.2g} at ε = {first:g}): {order['orthogonal']}.\n"
            f"- **Naive score**: slope {p['slopes']['naive']:.2f}: {order['naive']} (ε also changes the denominator, "
            "so the line bends a little).\n"
            f"- **DML-CMR's ŝ**: slope {s_slope:.2f}. This one is **not a measurement**: the experiment refits the "
            "second stage in closed form (least squares on a polynomial basis), which is linear in its targets, so an "
            "error ε·Δ in ŝ moves f̂ by exactly ε times a fixed curve, and the slope is 1 by construction. What it "
            "does measure is the size of that curve: not zero, so the score does not protect f̂ against errors "
            "in ŝ.")
    st.markdown(text)


def demand_section():
    st.markdown("#### The same contrast for the ticket-demand f")
    contrast = demand_contrast()
    if contrast is None:
        st.caption("The coverage study's summary (dmlcore/data/files/effect-coverage.csv) is not in this installation.")
        return
    shown, text = contrast
    st.markdown(
        "The effect of the ticket-demand f, its average slope in price, is a number computed from f̂. Plugging f̂ "
        "in inherits f̂'s bias (the previous tab: an error in ŝ moves f̂ at first order). The **debiased** effect "
        "adds a correction, the average of a weight ξ(C) times the residual Y − f̂(A, X), with ξ (the Riesz "
        "representer) estimated from the data so that the correction cancels f̂'s error to first order: the same idea as the orthogonal score "
        "above, for the effect instead of θ (docs/coverage.md has the details). Measured over simulated "
        "demand-iv data sets (1,000 rows each, `python -m bench.effect_coverage`):")
    st.dataframe(shown, hide_index=True, key=state.LEARN_DEMAND_DEBIASED, column_config={
        "data sets": short("sets", "data sets"),
        "mean error (estimate − truth)": short("mean error", "mean error (estimate − truth)", "%.3f"),
        "sd of estimates": short("sd", "sd of estimates", "%.3f"),
        "95 % interval covers the truth": short("covers", "95 % interval covers the truth", "%.3f"),
        "width / width needed": short("width ratio", "width / width needed", "%.3f")})
    errors = ", ".join(f"{100 * mc_se(c, int(n)):.1f}" for c, n in zip(shown["95 % interval covers the truth"],
                                                                  shown["data sets"]))
    st.caption(f"Monte-Carlo standard errors of the coverages, in the table's order: {errors} percentage points "
               "(each over its data sets).")
    st.markdown(f"- {text}\n- The Results page shows each run's effect with its interval and its kind (debiased, "
                "plug-in or a linear coefficient) and, where it was measured, the coverage of that kind of interval.")
