"""Learn, tab Proximal learning: the proxies' conditions, the bridge, and proximal 2SLS."""

import streamlit as st

from dashboard import state
from dashboard.learn.common import chart, notebook_button, num
from dmlcore.teaching import figures, proximal


@st.cache_data(show_spinner=False, max_entries=50)
def proximal_exp(noise: float, kappa: float, n: int):
    return proximal.proximal(proxy_noise=noise, kappa=kappa, n=n)


# The tab's graph, one short label a node in three rows (the proxies' roles at a glance on a projector);
# the Roles page draws the same graph for any data with dashboard.diagram.causal_dot.
PROJECTOR_DOT = """digraph G {
rankdir=TB; bgcolor="transparent"; nodesep=0.35; ranksep=0.35;
node [shape=box, style=filled, fontname="Helvetica", fontsize=14, margin="0.08,0.04", color="#555555"];
edge [color="#444444"];
U [label="U hidden", shape=ellipse, style=dashed, color="#888888", fontcolor="#666666"];
Z [label="Z fuel prices", fillcolor="#c7e9c0"]; W [label="W page views", fillcolor="#dadaeb"];
A [label="A price", fillcolor="#c6dbef"]; Y [label="Y sales", fillcolor="#fdd0a2"];
U -> Z [style=dashed, color="#888888"]; U -> W [style=dashed, color="#888888"];
U -> A [style=dashed, color="#888888"]; U -> Y [style=dashed, color="#888888"];
Z -> A; W -> Y; A -> Y [penwidth=2.2, label=" effect"];
{rank=same; Z; W;} {rank=same; A; Y;}
}"""


def pcl_tab():
    st.markdown(
        "**Proximal causal learning** needs no instrument. It uses two kinds of *proxies* of the hidden "
        "confounder U:\n"
        "- **treatment proxies** Z (fuel prices): related to U; they may affect the treatment but not the "
        "outcome — Z is independent of Y given A, U and X;\n"
        "- **outcome proxies** W (web page views): related to U; they may affect the outcome, but neither "
        "the treatment nor Z may affect them — W is independent of (A, Z) given U and X.")
    st.graphviz_chart(PROJECTOR_DOT, width=460)
    left, _ = st.columns([5, 1])
    with left:
        st.markdown(
            "Two more conditions make the proxies enough, and a third makes the bridge unique (Miao, Geng & "
            "Tchetgen Tchetgen 2018; Cui et al. 2023; *not simulated here*). First, a **bridge function** h(a, w, x) solving")
        st.latex(r"\mathbb{E}[\,Y - h(A, W, X) \mid A, Z, X\,] = 0")
        st.markdown(
            "must **exist**. The equation asks E[h(A, W, X) | A, Z, X] to equal E[Y | A, Z, X]: for each (a, x) an "
            "integral equation in w. The usual sufficient conditions for a solution are a condition on **Z given W**, "
            "*completeness of Z given (W, A, X)* (the only function of Z whose mean given W is always zero is zero), "
            "together with *Picard's condition*: along the singular functions of the conditional-expectation operator "
            "from functions of W to functions of Z, the components of E[Y | A, Z, X] must shrink fast enough relative "
            "to its singular values (and that operator must be compact). Second, the proxies must be rich enough about "
            "U: *completeness of U given (A, Z, X)*, so that every solution of the observed equation also solves the "
            "same equation given U and therefore removes U's bias. Third, only for h to be **unique**: "
            "*completeness of W given (A, Z, X)*. Uniqueness is not needed for the effect: averaging any bridge over "
            "the outcome proxy gives the causal curve")
        st.latex(r"\mathbb{E}[Y \mid do(a)] = \mathbb{E}_{W, X}[h(a, W, X)]")
        st.markdown(
            "and when several h solve the equation, all of them give the same average (*not simulated here*). The "
            "estimators are those of IV; only the roles change: h takes (A, W, X), and the conditioning set is "
            "(A, Z, X).")
    st.markdown("#### Experiment: what the proxies buy")
    st.markdown(
        "A linear market: U hidden; Z = U + τ·noise; price A = U + 0.5 Z + noise; W = U + τ·noise + κ·A; sales "
        "Y = −1·A + 2·U + noise. With κ = 0 the bridge h(a, w) = −a + 2w solves the equation, and *proximal "
        "2SLS* (regress Y on A and W, instrumenting W with Z) estimates the effect −1. 200 data sets.")
    c1, c2, c3 = st.columns(3)
    noise = c1.slider("Proxy noise τ", 0.0, 2.0, 1.0, 0.1, key=state.LEARN_PCL_NOISE, persist_state="session",
                      help="Standard deviation of the proxies' own noise: 0 means W and Z measure U exactly.")
    kappa = c2.slider("Effect κ of the price on the outcome proxy", -0.5, 0.5, 0.0, 0.05, key=state.LEARN_PCL_KAPPA,
                      persist_state="session", help="Not zero: the outcome proxy is affected by the treatment, "
                                                    "which the method forbids.")
    n = c3.select_slider("Rows per data set", [500, 1000, 2000], value=1000, key=state.LEARN_PCL_N, persist_state="session")
    exp = proximal_exp(float(noise), float(kappa), int(n))
    notebook_button("proximal", noise=float(noise), kappa=float(kappa), n=int(n))
    chart(figures.estimates_box(exp, None, x_title="", title="Estimates of the effect of price (truth −1)"),
                    key=state.LEARN_PCL_PLOT)
    s = exp.summary.set_index("estimator")
    span = lambda name: f"{num(s.loc[name, 'q25'])} to {num(s.loc[name, 'q75'])}"  # noqa: E731  the ends, as the plan quotes them
    lines = [
        f"**Y on A**: median {num(s.loc['Y on A', 'median'])}: confounded by U.",
        f"**Y on A and W** (treating the proxy as if it were U): {num(s.loc['Y on A and W', 'median'])}: a noisy "
        "proxy removes only part of the bias (all of it only when τ = 0).",
        f"**Proximal 2SLS**: {num(s.loc['proximal 2SLS', 'median'])}; the middle half of the draws spans "
        f"{span('proximal 2SLS')}.",
        "**Z dropped** (replaced by noise unrelated to U): median "
        f"{num(s.loc['proximal 2SLS, Z dropped (noise)', 'median'])}, "
        f"middle half {span('proximal 2SLS, Z dropped (noise)')}: with one kind of proxy the bridge "
        "is not identified, and the estimates scatter around the regression of Y on A and W ("
        + ("unbiased here only because τ = 0: the proxy measures U exactly)." if noise == 0 else
           f"{num(s.loc['Y on A and W', 'median'])}, biased because the proxy is noisy)."),
    ]
    if kappa != 0:
        lines.append(f"With κ = {kappa:g}, the outcome proxy carries the price's effect, and proximal 2SLS tends to "
                     f"−1 − 2κ = {num(exp.params['predicted'])} (measured median "
                     f"{num(s.loc['proximal 2SLS', 'median'])}): the assumption matters.")
    st.markdown("\n".join(f"- {line}" for line in lines))
