"""Learn, tab Instrumental variables: the assumptions, the moment restriction, the Wald
estimator and LATE."""

import streamlit as st

from dashboard import state
from dashboard.diagram import causal_dot, moment_text
from dashboard.learn.common import chart, notebook_button, num
from dmlcore.teaching import figures, iv


@st.cache_data(show_spinner=False, max_entries=50)
def wald_exp(rho: float, seed: int):
    return iv.wald(rho=rho, seed=seed)


@st.cache_data(show_spinner=False, max_entries=50)
def late_exp(compliers: float, effect_always: float):
    return iv.late(compliers=compliers, always=(1 - compliers) / 2, effect_always=effect_always)


def iv_tab():
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.markdown(
            "**The problem.** Ticket sales *Y* depend on the price *A*, but a hidden demand shock *U* (a "
            "conference in town) raises both: a regression of sales on price mixes the effect of the price "
            "with the effect of *U*.\n\n"
            "**An instrument** *Z* (the airline's fuel cost) identifies the effect when\n"
            "1. it moves the price (*relevance*; the data can check it: the first-stage F, tab *Weak IV*),\n"
            "2. it affects sales only through the price (*exclusion*; tab *Invalid IV*), and\n"
            "3. given the covariates *X*, it is as good as randomly assigned: independent of *U* and of "
            "everything else that drives sales (*instrument independence*, conditional on *X*).\n\n"
            "The data cannot establish 2 and 3; they must come from knowing how the instrument arises. Some "
            "violations do leave traces (several instruments that disagree: tab *Invalid IV*; with a binary "
            "treatment, outcome distributions that no valid instrument could produce, Kitagawa 2015; *not simulated here*), but passing "
            "such checks does not make an instrument valid. With "
            "additive noise, Y = f(A, X) + e, and f's level fixed so that E[e | X] = 0, assumptions 2 and 3 give "
            "E[e | Z, X] = E[e | X] = 0, so averaging over what is left random given the instrument gives")
        # two lines, so that the identity fits the column at 1,024 pixels
        st.latex(r"\begin{aligned}\mathbb{E}[Y \mid Z, X] &= \mathbb{E}[f(A, X) \mid Z, X] \\ "
                 r"&= \int f(a, X)\, p(a \mid Z, X)\, da\end{aligned}")
        st.markdown("Both sides can be learned from data: that is the conditional moment restriction")
        st.latex(moment_text("iv"))
        st.markdown(
            "*f* is the **causal** function: f(a, x) is the expected sales if we *set* the price to *a* for "
            "customers with covariates *x*. The equation pins *f* down only if the instrument moves the price "
            "in enough ways (*completeness*, the nonparametric form of relevance; not simulated on this page). "
            "Even then, recovering *f* is *ill-posed*: small errors in E[Y | Z, X] can mean large errors in *f*, "
            "more so the less the instrument moves the price (tab *Ticket demand*).")
    with right:
        st.graphviz_chart(causal_dot("iv", {"outcome": "sales", "treatment": "price", "instrument": "fuel_price",
                                            "covariates": ["time", "customer_type"]}))
        st.caption("Dashed: the hidden confounder U, never observed.")
    wald_section()
    late_section()


def wald_section():
    st.markdown("#### The Wald estimator: one binary instrument")
    st.markdown(
        "A simulated market (effect of price on sales −1; hidden shock *U*; the instrument switches the fuel "
        "cost between two levels). With a binary instrument the effect is the **Wald ratio**: how much mean "
        "sales differ between the instrument's two groups, divided by how much mean prices differ.")
    c1, c2 = st.columns(2)
    rho = c1.slider("Confounding ρ", 0.0, 0.99, 0.9, 0.01, key=state.LEARN_WALD_RHO, persist_state="session",
                    help="How strongly the hidden shock U drives both price and sales.")
    seed = c2.number_input("Seed", 0, 10_000, 0, key=state.LEARN_WALD_SEED, persist_state="session")
    exp = wald_exp(float(rho), int(seed))
    notebook_button("wald", rho=float(rho), seed=int(seed))
    chart(figures.wald_scatter(exp), key=state.LEARN_WALD_PLOT)
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
        "like years of schooling, and no covariates, 2SLS estimates a weighted average, with non-negative weights "
        "under monotonicity, of the effects of each one-unit step on those whom the instrument moves across that step "
        "(Angrist & Imbens 1995; with covariates entered linearly the weights need not be positive: tab "
        "*Card (1995)*, section 4; *not simulated here*).")
    c1, c2 = st.columns(2)
    compliers = c1.slider("Share of compliers", 0.1, 0.9, 0.4, 0.05, key=state.LEARN_LATE_SHARE, persist_state="session",
                          help="The rest is split equally between always-takers and never-takers.")
    effect_always = c2.slider("Effect for always-takers (compliers: 1, never-takers: 0)", -2.0, 4.0, 3.0, 0.5,
                              key=state.LEARN_LATE_EFFECT, persist_state="session")
    exp = late_exp(float(compliers), float(effect_always))
    notebook_button("late", compliers=float(compliers), effect_always=float(effect_always))
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
        f"{num(med.loc['treated minus untreated', 'median'])}. In every draw that difference is the sum of two things "
        f"that are not the ATE (medians over the draws): the average effect among the treated, ATT = "
        f"{num(exp.params['att'])} (the treated are the always-takers and "
        "the compliers whose instrument is on; when their effects differ from the others', this is **selection on "
        f"gains**), plus {num(exp.params['baseline_gap'])}, the gap the two groups would show even untreated "
        "(**selection on U**: the types differ in *U*). The "
        "tool's estimators assume additive noise (the same effect for everyone with the same inputs). With a "
        "binary treatment and a binary instrument their f(1) − f(0) solves the same two equations as the Wald "
        "ratio, so it estimates the same compliers' effect; with more values, what they estimate when effects "
        "differ is not covered by the paper's theory.")
