"""Learn, tab Orthogonal score: what the paper's score is orthogonal in, and a perturbation experiment."""

import numpy as np
import streamlit as st

from dashboard import state
from dashboard.learn.common import chart, notebook_button, num, slow
from dmlcore.teaching import figures, nuisance


def score_tab():
    st.markdown(
        "The three estimators compared here (the naive plug-in, CE-DML-CMR and DML-CMR) work in two stages. The "
        "**first stage** learns nuisances: the conditional distribution of f's inputs given C, which gives "
        "g(f, c) = E[f(A, X) | C = c] by averaging over draws, and, for DML-CMR and CE-DML-CMR, s(c) = E[Y | C = c]. "
        "The **second stage** fits f by minimizing an average loss. Not every estimator of the tool works this "
        "way: 2SLS, LIML and Fuller project on the instruments; KIV, DFIV and KPV learn in their first stage only "
        "the conditional mean of features of f's inputs (all that g(f, c) needs when f is linear in those "
        "features), not a distribution to draw from; DeepGMM, PMMR and NMMR learn no first stage at all: they "
        "weight the moment restriction by functions of C (a learned adversary or a kernel).")
    c1, c2 = st.columns(2, border=True)
    with c1:
        st.markdown("**Naive plug-in** (DeepIV-style)")
        st.latex(r"L(f) = \big(Y - \hat g(f, C)\big)^2")
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
        "- What the theory of orthogonal statistical learning, double machine learning for a loss over functions "
        "(Foster & Syrgkanis 2023), needs is different: the "
        "**first-order condition** that defines f̂ — the derivative of the loss in f — must not move, to first "
        "order, when the nuisances are slightly wrong. For ψ it moves: an error Δ(c) in ŝ shifts the condition "
        "in a direction φ by −2 E[Δ(C) g(φ, C)], which is not zero in general; an error in ĝ shifts it too. "
        "The experiment below measures how far f̂ moves.\n"
        "- The paper's rate N^(−1/2) is proven for an f with finitely many parameters; a nonparametric f "
        "converges more slowly.")
    st.markdown("#### Experiment: perturb the nuisances by a known amount")
    st.markdown(
        "On simulated data with f(a) = 2 sin(a) (tab *Forbidden regression*): CE-DML-CMR and DML-CMR are fitted "
        "with small gradient-boosting nuisances (the naive plug-in uses CE-DML-CMR's draws with y as target, as "
        "the tool does). Then one nuisance is made wrong by a known ε and the second stage is refitted, in closed "
        "form (f a degree-5 polynomial), so that only the nuisance changes: ŝ plus ε·sd(Y)·Δ(c) with Δ the "
        "standardized instrument; the price draws shifted by ε·sd(price); or spread (1 + ε) times wider. "
        "5 data sets of 1,000 rows" + _timing() + ".")
    notebook_button("orthogonality")
    exp = slow("orthogonality", "Run the perturbation experiment", lambda cb: nuisance.orthogonality(callback=cb))
    if exp is None:
        return
    chart(figures.orthogonality_figure(exp), key=state.LEARN_ORTH_PLOT)
    s = exp.summary
    at = {e: s[np.isclose(s["eps"], e)].set_index(["perturbation", "method"]) for e in (0.0, 0.1, 0.2)}
    base = at[0.0]["rmse"].xs("s")
    order = s.groupby(["perturbation", "method"])["order"].first()
    ch1, ch2 = at[0.1]["change"], at[0.2]["change"]
    first = {key: value < 1.5 for key, value in order.items() if np.isfinite(value)}  # naive has no s-hat
    g_first = all(first[(k, m)] for k in ("shift", "widen") for m in nuisance.METHODS)
    st.markdown(
        f"- **An error in ŝ**: at ε = 0.1 f̂ of CE-DML-CMR moves by {num(ch1['s', 'ce-dml-cmr'])} (root mean "
        f"square over the grid) and of DML-CMR by {num(ch1['s', 'dml-cmr'])}; at ε = 0.2 by "
        f"{num(ch2['s', 'ce-dml-cmr'])} and {num(ch2['s', 'dml-cmr'])}: exactly "
        f"{num(ch2['s', 'dml-cmr'] / ch1['s', 'dml-cmr'], 1)} times as much. That ratio is **not a measurement**: "
        "the second stage here is a least-squares fit, linear in its targets, so an error ε·Δ in ŝ moves f̂ by ε "
        "times a fixed curve, first order by construction. What is measured is the size of that curve, which "
        "would be 0 for a score insensitive to ŝ. What a second-order effect looks like: tab *Orthogonality that "
        "works*. The naive plug-in has no ŝ and does not move.\n"
        f"- **An error in ĝ**: shifting the price draws by 0.1 sd moves f̂ by {num(ch1['shift', 'naive'])} "
        f"(naive), {num(ch1['shift', 'ce-dml-cmr'])} (CE-DML-CMR), {num(ch1['shift', 'dml-cmr'])} (DML-CMR); "
        f"widening them by 10 % by {num(ch1['widen', 'naive'])}, {num(ch1['widen', 'ce-dml-cmr'])}, "
        f"{num(ch1['widen', 'dml-cmr'])}. These are measured (the draws enter f̂ through the nonlinear basis): "
        f"estimated orders for DML-CMR {num(order['shift', 'dml-cmr'], 1)} and "
        f"{num(order['widen', 'dml-cmr'], 1)}"
        + (" (log₂ of the change at 2ε over the change at ε; 1 is first order, 2 second order): first order "
           "for every method.\n" if g_first else ".\n")
        + f"- With the nuisances as fitted (ε = 0) the errors are {num(base['naive'])} (naive), "
        f"{num(base['ce-dml-cmr'])} (CE-DML-CMR) and {num(base['dml-cmr'])} (DML-CMR).")
    if all(first.values()):
        st.markdown(
            "**What this teaches**: in this tool no method's f̂ is protected against nuisance errors to first "
            "order, the orthogonal score included. What the score's target changes is the noise: ŝ averages the "
            "outcome noise before the second stage, y carries all of it. What cross-fitting changes is in tab "
            "*Cross-fitting*; a score that does protect its estimate, in tab *Orthogonality that works*.")
    else:
        st.markdown("**What this teaches**: the curves above differ in order between methods or errors; read "
                    "each panel's slope near ε = 0.")
    st.caption(f"Computed in {exp.seconds:.0f} s; shared with everyone using this server until it restarts.")


def _timing() -> str:
    """How long the saved run took (bench/results/teaching/run.json), or nothing when it is not there."""
    run = nuisance.saved_run("orthogonality")
    if not run:
        return ""
    return (f"; about {run['seconds']:.0f} s on {run['machine']} with other work running (load average "
            f"{run['load average']:.0f}, {run['date'][:10]})")
