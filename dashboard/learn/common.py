"""What every Learn tab shares: number formatting, the slow experiments shared by a server's
sessions, and the first-stage strength metric."""

import pandas as pd
import streamlit as st

from dashboard import state
from dashboard import ui
from dashboard.training import one_openmp_thread
from dmlcore.inference.first_stage import strength_label
from dmlcore.teaching import prepared
from dmlcore.errors import DMLCoreError


def num(x: float, digits: int = 2) -> str:
    """A number as the page writes it (a true minus sign)."""
    return f"{x:.{digits}f}".replace("-", "−")


def pct(x: float) -> str:
    """A share in whole percent, except near 0 and 100 % where rounding would say "0 %" or "100 %"."""
    return f"{100 * x:.1f} %" if 0 < x < 0.01 or 0.99 < x < 1 else f"{100 * x:.0f} %"


def chart(fig, key: str):
    """Draw a Learn chart for a projector: its title is written above it in the page's text (so it can
    never overlap the legend or the panels' titles, whatever the width) and the plot keeps the rest of
    its height."""
    title = fig.layout.title.text if fig.layout.title is not None else None
    if title:
        st.markdown(f"**{title}**")
        top = fig.layout.margin.t if fig.layout.margin and fig.layout.margin.t is not None else 60
        fig.update_layout(title=None, margin=dict(t=max(40, top - 50)))
    st.plotly_chart(fig, key=key)


def notebook_button(name: str, **settings):
    """A download of experiment ``name`` as a Jupyter notebook that calls dmlcore with ``settings``
    (the tab's current ones) and prints the numbers the tab shows (:mod:`dmlcore.teaching.notebooks`)."""
    from dmlcore.teaching import notebooks
    st.download_button("Notebook", notebooks.dumps(name, settings), file_name=f"{name}.ipynb",
                       mime="application/x-ipynb+json", key=state.LEARN_NOTEBOOK(name), icon=":material/download:",
                       on_click="ignore", help="This experiment as a Jupyter notebook to take home: it calls "
                       "dmlcore with the settings above and prints the numbers shown here.")


def short(label: str, full: str, fmt: str | None = None):
    """A column shown under a short header ``label`` with its full name ``full`` as the header's help,
    so that a table fits a projector's width; numbers formatted with ``fmt`` when given."""
    if fmt is None:
        return st.column_config.Column(label, help=full)
    return st.column_config.NumberColumn(label, help=full, format=fmt)


def mc_se(p: float, draws: int) -> float:
    """Monte-Carlo standard error of a share p measured over ``draws`` independent draws."""
    return float((p * (1 - p) / draws) ** 0.5)


def cover(p: float, draws: int) -> str:
    """A coverage measured over ``draws`` simulations with its Monte-Carlo standard error, to one decimal
    as docs/teaching.md quotes it."""
    return f"{100 * p:.1f} % (s.e. {100 * mc_se(p, draws):.1f} %)"


@st.cache_resource
def shared_results() -> dict:
    """Results of the slow experiments, shared by every session of this server (a class sees a
    result the moment one student or the teacher has computed it)."""
    return {}


def slow(name: str, label: str, run):
    """A slow experiment: the shared result when there is one (computed on this server, or prepared on
    disk before class: :mod:`dmlcore.teaching.prepared`), else a button labelled ``label``
    that runs it (``run(progress)``) with a progress bar. Returns the result or None."""
    results = shared_results()
    if name in results:
        return results[name]
    kept = prepared.load(name)          # prepared before class (python -m dmlcore.teaching.prepared)
    if kept is not None:
        results[name] = kept
        return kept
    if not st.button(label, key=state.LEARN_RUN(name), type="primary", icon=":material/play_arrow:"):
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


NOTATION = (
    ("Y", "outcome (sales)", "every tab"),
    ("A", "treatment (price); D in the double machine learning papers", "every tab"),
    ("X", "observed covariates (season, customer type; x₀, x₁, … in Orthogonality that works)", "every tab"),
    ("U", "the hidden confounder, never in the data", "every tab"),
    ("Z", "IV tabs: the instrument (the airline's fuel cost). Proximal learning: the treatment proxies "
          "(the literature's letter; fuel prices again, now allowed to share the cause U, which an instrument "
          "may not)", "every tab"),
    ("W", "outcome proxies (web page views; in RHC pH and haematocrit)", "Proximal learning, RHC"),
    ("C", "what the moment restriction conditions on: (Z, X) for IV, (A, Z, X) for proximal learning", "IV, PCL"),
    ("f, f̂", "the causal (structural) function and its estimate", "every tab"),
    ("h", "the bridge function of proximal learning", "Proximal learning"),
    ("s, g; ŝ, ĝ", "DML-CMR's nuisances s(c) = E[Y | C = c] and g(f, c) = E[f(A, X) | C = c]; their estimates",
     "Orthogonal score, Cross-fitting"),
    ("θ; ℓ, m, r; q", "the scalar effect of the partially linear IV model; its nuisances E[Y | X], E[A | X], "
                      "E[Z | X]; the direct effect q(X) of the covariates", "Orthogonality that works"),
    ("β", "the effect of price in the linear simulations (−1)", "linear IV tabs, Proximal learning"),
    ("ρ", "confounding: how strongly U drives both price and sales", "IV tabs"),
    ("π", "how much the instrument moves the price", "IV tabs"),
    ("δ", "the direct effect of the instrument on sales (exclusion violated); in Card, the largest direct effect "
          "allowed", "Invalid instruments, Card"),
    ("γ", "the direct effect of growing up near a college on log wage (exclusion violated)", "Card"),
    ("ξ, ξ̂", "the weight (Riesz representer) of the debiased effect and its estimate", "Card, Orthogonality that works"),
    ("σ", "the spread of the price given the instrument", "Forbidden regression"),
    ("τ", "the proxies' own noise", "Proximal learning"),
    ("κ", "the effect of price on the outcome proxy", "Proximal learning"),
    ("ε, Δ", "the size and the direction of a nuisance error added on purpose", "Orthogonal score, "
                                                                                "Orthogonality that works"),
    ("φ", "a direction in which f is varied (the first-order condition)", "Orthogonal score"),
    ("F, K, N", "the first-stage F statistic; the number of cross-fitting folds; the number of rows", "every tab"),
)


def notation():
    """One table of the letters used on the Learn page (and the rest of the tool)."""
    with st.popover("Notation", icon=":material/menu_book:", help="Every letter on this page", width="stretch"):
        st.dataframe(pd.DataFrame(NOTATION, columns=["symbol", "means", "where"]), hide_index=True,
                     key=state.LEARN_NOTATION, column_config={"means": st.column_config.TextColumn(width="large")})
