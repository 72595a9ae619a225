"""Roles: the problem (IV, PCL, general CMR) and what each column is, with the causal diagram."""

import streamlit as st

from dashboard import results, state, ui
from dashboard.training import one_openmp_thread
from dashboard.diagram import causal_dot, moment_text
from dashboard.state import ABSORB_KEY, CATEGORICAL_KEY, PROBLEM_KEY, ROLE_KEYS, SINGLE_ROLES, WEIGHTS_KEY
from dmlcore.data.roles import ALLOWED, PROBLEMS, REQUIRED, CausalData, suggest_categorical
from dmlcore.inference.first_stage import WEAK_F, first_stage, strength_label, strong_bar
from dmlcore.errors import DMLCoreError

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

ROLE_HELP = {
    "outcome": "What the treatment acts on, e.g. sales or log wage.",
    "treatment": "The variable whose causal effect you want (one column).",
    "instrument": "Moves the treatment, affects the outcome only through the treatment, and shares no hidden "
                  "cause with the outcome (it is as good as randomly assigned).",
    "treatment_proxy": "Proxies of the hidden confounder that may affect the treatment but must not affect the "
                       "outcome (independent of it given treatment, confounder and covariates).",
    "outcome_proxy": "Proxies of the hidden confounder that may affect the outcome; neither the treatment nor "
                     "the treatment proxies may affect them.",
    "covariates": "Observed variables that affect treatment and outcome; f depends on them too.",
    "inputs": "The columns f takes.",
    "conditioning": "The columns C of E[Y - f(inputs) | C] = 0 (may overlap with the inputs).",
}
ss = st.session_state


def validate(ds: state.Dataset, kwargs: dict):
    """CausalData for the chosen roles, or (None, message, offending role)."""
    problem = kwargs["problem"]
    roles = {k: v for k, v in kwargs.items() if k != "problem"}
    try:
        return CausalData(ds.table, problem, name=ds.name, **roles), None, None
    except DMLCoreError as err:
        return None, str(err), ("categorical" if "ategorical" in str(err) else ui.offending_role(str(err), roles))


def categorical_widget(ds: state.Dataset, kwargs: dict, message: str | None, offending: str | None):
    """Which of the used columns hold category codes; integer columns with few levels are suggested."""
    used = [c for role, v in kwargs.items() if role not in ("problem", "outcome", "categorical")
            for c in ([v] if isinstance(v, str) else v) if c]
    ss[CATEGORICAL_KEY] = [c for c in ss.get(CATEGORICAL_KEY) or [] if c in used]
    st.multiselect("Categorical columns", used, key=CATEGORICAL_KEY, placeholder="None",
                   persist_state="session",
                   help="Columns whose numbers are codes of categories (a region, a customer type): networks "
                        "and linear models see one 0/1 column per level, 2SLS uses dummies, trees split on the codes.")
    suggested = [c for c in suggest_categorical(ds.table, used) if c not in ss[CATEGORICAL_KEY]]
    if suggested:
        st.caption("Integer columns with few levels, perhaps categories: " + ", ".join(suggested) + ".")
    if message and offending == "categorical":
        ui.show_problem(message)


def linear_choice(kwargs: dict) -> dict:
    """The chosen absorbed columns and weights (CausalData's ``absorb`` and ``weights``) from the session."""
    used = {c for role, v in kwargs.items() if role not in ("problem", "categorical")
            for c in ([v] if isinstance(v, str) else v) if c}
    absorb = [c for c in ss.get(ABSORB_KEY) or [] if c not in used]
    weights = ss.get(WEIGHTS_KEY)
    return {"absorb": absorb, "weights": weights if weights and weights not in used else None}


def linear_words(data: CausalData) -> str:
    """The data's absorbed fixed effects and weights in words ("" when there are none)."""
    what = [f"fixed effects of {' and '.join(data.absorb)} absorbed"] if data.absorb else []
    return "; ".join(what + ([f"weighted by {data.weights}"] if data.weights else []))


def linear_widgets(ds: state.Dataset, kwargs: dict, message: str | None, offending: str | None):
    """Fixed effects to absorb and a weights column, for the linear IV methods (2SLS, LIML, Fuller, GMM)."""
    used = {c for role, v in kwargs.items() if role not in ("problem", "categorical")
            for c in ([v] if isinstance(v, str) else v) if c}
    free = [c for c in ds.scalar_columns if c not in used]
    ss[ABSORB_KEY] = [c for c in ss.get(ABSORB_KEY) or [] if c in free]
    if ss.get(WEIGHTS_KEY) not in free:
        ss[WEIGHTS_KEY] = None
    chosen = bool(ss[ABSORB_KEY] or ss[WEIGHTS_KEY])
    with st.expander("Fixed effects and weights (linear IV methods)", expanded=chosen or offending in ("absorb", "weights")):
        st.multiselect("Absorb fixed effects of", free, key=ABSORB_KEY, max_selections=2, placeholder="None",
                       persist_state="session",
                       help="One or two columns without a role (a region, a firm, a year): 2SLS, LIML, Fuller, GMM and "
                            "the first-stage diagnostics demean every column within their groups, as if one dummy per "
                            "level were a covariate. The other methods refuse them.")
        st.selectbox("Weights", free, key=WEIGHTS_KEY, index=None, placeholder="None (unweighted)",
                     persist_state="session",
                     help="A column of positive regression weights (e.g. sampling weights) for the same methods.")
        if chosen:
            st.caption("Only 2sls, liml, fuller and gmm-iv take these; DML-CMR, the naive plug-in and the peers "
                       "refuse them when you train. The debiased effect and the held-out residual are not computed "
                       "with them.")
        if message and offending in ("absorb", "weights"):
            ui.show_problem(message)


def role_widgets(ds: state.Dataset, problem: str, message: str | None, offending: str | None):
    columns = ds.scalar_columns
    for role in ALLOWED[problem]:
        key = ROLE_KEYS[role]
        label = ui.ROLE_LABELS[role] + (" *" if role in REQUIRED[problem] else "")
        if role in SINGLE_ROLES:
            if ss.get(key) not in columns:
                ss[key] = None
            st.selectbox(label, columns, key=key, placeholder="Choose a column", help=ROLE_HELP[role],
                         persist_state="session")
        else:
            ss[key] = [c for c in ss.get(key) or [] if c in columns]
            st.multiselect(label, columns, key=key, placeholder="Choose columns", help=ROLE_HELP[role],
                           persist_state="session")
        if message and offending == role:
            ui.show_problem(message)
    if message and offending not in ALLOWED[problem]:
        ui.show_problem(message)


def diagnostics(ds: state.Dataset, data: CausalData):
    """The first stage (IV) or the proxies' linear link (PCL), labelled in plain words."""
    proximal = data.problem == "pcl"
    st.subheader("Proxies: do the treatment proxies predict the outcome proxies?" if proximal
                 else "First stage: is the instrument strong?")
    flexible = st.toggle("Also fit a flexible (boosted) first stage (a few seconds)", key=state.ROLES_NP)

    def make():
        with st.spinner("Fitting the first stage..."), one_openmp_thread():
            return first_stage(data, nonparametric=flexible, inference=not proximal)
    result = state.cached(state.FIRST_STAGE_CACHE, (id(ds.table), data.describe_roles(), str(data.linear_options()),
                                                    flexible), make, errors_as_text=True)
    if isinstance(result, str):
        st.error(result)
        return
    columns = result["outcome_proxies" if proximal else "treatments"]
    if data.linear_options():
        st.caption(f"{linear_words(data).capitalize()}: every number below is of the "
                   + ("demeaned " if data.absorb else "") + ("weighted " if data.weights else "")
                   + "rows" + (" (the absorbed levels count in the F's degrees of freedom)" if data.absorb else "")
                   + "; the boosted R² gain takes neither fixed effects nor weights, so it is not computed.")
    q = len(result["instruments"])
    bar, source, _, _ = strong_bar(q, "unadjusted", len(columns))
    scale = (f"weak below {WEAK_F:g} (Staiger-Stock rule of thumb); "
             + (f"strong above {bar:g} ({source})" if bar is not None else source) + ". See Learn.")
    for name, d in columns.items():
        c1, c2, c3 = st.columns(3)
        label = strength_label(d["f_stat"], q, n_endogenous=len(columns), proximal=proximal)
        # with several endogenous columns each F only says whether that column alone is weak; the
        # Cragg-Donald F below speaks for them together
        level = label.level if len(columns) == 1 or label.level == "weak" else f"above {WEAK_F:g}"
        c1.metric(f"{'Proxy first-stage' if proximal else 'First-stage'} F ({name})", format_f(d["f_stat"]),
                  delta=level, delta_arrow="off", delta_color=ui.STRENGTH_COLORS.get(level, "gray"),
                  help=(f"F statistic of the treatment proxies in the linear regression of the outcome proxy {name} "
                        f"on the proxies, the treatment and the covariates (homoskedastic). Labels: " if proximal else
                        "F statistic of the instruments in the linear regression of the treatment on instruments "
                        "and covariates (homoskedastic). Labels: ") + scale)
        c2.metric("Partial R² of the " + ("treatment proxies" if proximal else "instruments"), f"{d['partial_r2']:.3f}",
                  help=f"Share of {name}'s variation left after the " + ("treatment and covariates" if proximal
                                                                         else "covariates")
                  + " that the " + ("treatment proxies" if proximal else "instruments") + " explain (linear).")
        if d.get("np_r2_gain") is not None:
            c3.metric("Held-out R² gain, boosted", f"{d['np_r2_gain']:.3f}",
                      help="How much a flexible first stage on all the conditioning columns beats one without the "
                           + ("treatment proxies" if proximal else "instruments") + " (5-fold held-out R²).")
    if len(columns) > 1:
        st.metric("Cragg-Donald F (rank version)", format_f(result["cragg_donald_f"]),
                  help="An F statistic built from the smallest canonical correlation between the "
                       + ("treatment proxies and the outcome proxies" if proximal else "instruments and the treatments")
                       + " (given the other conditioning columns): whether they move every "
                       + ("outcome proxy" if proximal else "treatment") + " in an independent direction (linear).")
    strength = result["strength"]
    if result.get("dropped_note"):
        st.info(result["dropped_note"].capitalize(), icon=":material/info:")
    if result["weak"]:
        st.warning(result["warning"], icon=":material/warning:")
    elif strength["level"] == "moderate":
        st.info(f"{'Proxy strength' if proximal else 'Instrument strength'} — {strength['text']}", icon=":material/info:")
    else:
        st.success(f"{'Proxy strength' if proximal else 'Instrument strength'} — {strength['text']}",
                   icon=":material/check_circle:")
    overid = (result.get("inference") or {}).get("overid")
    if overid:
        st.markdown("**Overidentification** (more instruments than treatments): "
                    + "; ".join(f"{OVERID_TITLES[k]} {v['stat']:.2f}, p = {v['pvalue']:.3f}"
                                for k, v in overid.items() if v) + ".")
        st.caption("Each tests whether the instruments agree with each other about the effect (null: all are valid "
                   "if one set is). A small p-value says at least one instrument is invalid or the effect is not "
                   "the same for all of them; a large one does not prove them valid. Sargan and Basmann assume "
                   "homoskedastic errors; Wooldridge's score test is heteroskedasticity-robust. Under a robust or "
                   "clustered covariance (Results, the CLI's --cov) Hansen's J is added; clustered, only it is "
                   "cluster-robust.")
    st.caption(result["note"])


OVERID_TITLES = {"sargan": "Sargan", "basmann": "Basmann", "wooldridge": "Wooldridge's score test",
                 "hansen_j": "Hansen's J"}


def format_f(value: float) -> str:
    """An F statistic for the screen: never a negative or non-finite number printed as one."""
    return f"{value:,.1f}" if value == value and abs(value) != float("inf") else "not finite"


def fixed_roles(data: CausalData):
    st.info("This simulation has an image among the inputs; its roles are fixed.", icon=":material/image:")
    ss[state.CAUSAL] = data
    left, right = st.columns([2, 3])
    with left:
        for role, cols in data.roles().items():
            shown = ", ".join(cols[:3]) + (f" … ({len(cols)} columns)" if len(cols) > 3 else "")
            st.markdown(f"**{ui.ROLE_LABELS[role]}:** {shown}")
    with right:
        st.graphviz_chart(causal_dot(data.problem, data.roles()))


def assign_roles(ds: state.Dataset):
    problem = st.radio("Problem", PROBLEMS, key=PROBLEM_KEY, horizontal=True, persist_state="session",
                       format_func=lambda p: ui.PROBLEM_TITLES[p])
    kwargs = state.roles_from_widgets()
    data, message, offending = validate(ds, {**kwargs, **linear_choice(kwargs)})
    ss[state.CAUSAL] = data

    left, right = st.columns([2, 3], gap="large")
    with left:
        role_widgets(ds, problem, message, offending)
        categorical_widget(ds, kwargs, message, offending)
        linear_widgets(ds, kwargs, message, offending)
    with right:
        st.graphviz_chart(causal_dot(problem, kwargs))
        st.latex(moment_text(problem))
        if data is not None:
            extra = f"; {linear_words(data)} (linear IV methods)" if data.linear_options() else ""
            st.success(f"Roles are valid: {data.describe_roles()}{extra}.", icon=":material/check_circle:")
            truth = state.truth()
            if ds.truth is not None and truth is None:
                st.info("These roles differ from the simulation's, so results will not be scored against "
                        "the truth.", icon=":material/info:")
            elif truth is not None:
                st.caption("Ground truth known. " + results.score_caption({"truth": truth.description,
                                                                           "dataset": ds.name}))
            if ds.caveat:
                st.warning(ds.caveat, icon=":material/help:")
    if data is not None and data.problem in ("iv", "pcl") and not data.image_columns:
        diagnostics(ds, data)
    if data is not None:
        st.page_link(ui.ESTIMATORS, label="Next: estimators", icon=":material/arrow_forward:")


st.title("Roles")
current = ui.need_data()
if current is not None:
    st.caption(f"Data: **{current.title or current.name}**, {len(current.table):,} rows.")
    if current.has_images:
        fixed_roles(current.suggested)
    else:
        assign_roles(current)
state.remember()  # a reload of this browser finds the data and choices again
