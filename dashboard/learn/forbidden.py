"""Learn, tab Forbidden regression: E[f(A) | Z] is not f(E[A | Z])."""

import streamlit as st

from dashboard import state
from dashboard.learn.common import chart, notebook_button, num
from dmlcore.teaching import figures, forbidden


@st.cache_data(show_spinner=False, max_entries=50)
def forbidden_exp(sigma: float, n: int):
    return forbidden.forbidden_regression(sigma=sigma, n=n)


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
    sigma = c1.slider("Spread σ of the price given the instrument", 0.3, 1.5, 0.8, 0.1, key=state.LEARN_FORB_SIGMA,
                      persist_state="session")
    n = c2.select_slider("Rows per data set", [500, 1000, 2000], value=1000, key=state.LEARN_FORB_N,
                         persist_state="session")
    exp = forbidden_exp(float(sigma), int(n))
    notebook_button("forbidden", sigma=float(sigma), n=int(n))
    chart(figures.forbidden_figure(exp), key=state.LEARN_FORB_PLOT)
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
