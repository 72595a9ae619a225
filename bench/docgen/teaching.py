"""The Learn page's and the teaching docs' figures (docs/teaching.md, docs/class.md): the derived
table ``bench/results/teaching/measured.csv``. Blocks for those docs register here the same way
(``@block("teaching:...")`` reading bench/results/teaching/*.csv)."""

from __future__ import annotations

from dmlcore.teaching.measured import measured

from .registry import derived_file
from .tables import fact, is_method, title


@derived_file("bench/results/teaching/measured.csv")
def measured_csv(rows) -> str:
    """The Learn page's summary of the benchmark rows (dmlcore.teaching.measured), as bench/teaching.py writes it."""
    return measured(folder=rows.folder).to_csv(index=False)


# ------------------------------------------------------------------ docs/teaching.md's tables and answer keys
import inspect  # noqa: E402
import math  # noqa: E402

from .registry import block  # noqa: E402
from .tables import prose, title  # noqa: E402


def _and(names: list) -> str:
    """Names in a sentence: "a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _f(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}".replace("-", "−")


def _se(p: float, n: int) -> float:
    """Monte-Carlo standard error of a share p over n draws."""
    return math.sqrt(p * (1 - p) / n)


def _cov(p: float, n: int) -> str:
    return f"{100 * p:.1f} % (s.e. {100 * _se(p, n):.1f})"


@block("teaching:card")
def card_table(rows) -> str:
    """The Card exercise's steps (bench/results/teaching/card.json, ``python -m bench.card_exercise``)."""
    data = rows.json("teaching/card.json")
    s, dml = data["linear"], data["dml_cmr"]
    ar = s["ar"]
    table = [
        ("First stage: educ on nearc4 (given X)", _f(s["first_stage"]["coef"]), f"s.e. {_f(s['first_stage']['se'])}"),
        ("Reduced form: lwage on nearc4 (given X)", _f(s["reduced_form"]["coef"]), f"s.e. {_f(s['reduced_form']['se'])}"),
        ("Their ratio (= 2SLS)", _f(s["ratio"]), ""),
        ("OLS of lwage on educ (given X)", _f(s["ols"]["coef"]), f"[{_f(s['ols']['lower'])}, {_f(s['ols']['upper'])}]"),
        ("2SLS", _f(s["tsls"]["coef"]), f"[{_f(s['tsls']['lower'])}, {_f(s['tsls']['upper'])}] (s.e. {_f(s['tsls']['se'])})"),
        ("First-stage F", f"{s['f_stat']:.1f}", s["strength"]["level"]),
        ("Anderson–Rubin 95 % set", "", f"[{_f(ar['lower'])}, {_f(ar['upper'])}]" if ar["shape"] == "interval"
         else ar["shape"]),
        *([("Effective F (robust; = the robust first-stage F with one instrument)", f"{s['effective_f']:.1f}", ""),
           ("Fuller (α = 1; LIML = 2SLS with one instrument)", _f(s["fuller"]["coef"]),
            f"[{_f(s['fuller']['lower'])}, {_f(s['fuller']['upper'])}]"),
           ("CLR 95 % set (= AR with one instrument)", "", f"[{_f(s['clr']['lower'])}, {_f(s['clr']['upper'])}]"
            if s["clr"]["shape"] == "interval" else s["clr"]["shape"]),
           (f"tF 95 % interval (Lee et al. 2022; critical value {s['tf']['critical']:.2f} at F {s['f_stat']:.1f})", "",
            f"[{_f(s['tf']['lower'])}, {_f(s['tf']['upper'])}]" if s["tf"]["lower"] is not None else "the whole line")]
          if "tf" in s else []),
        (f"DML-CMR ({dml['settings']['learner']}, K = {dml['settings']['folds']}, spline f), debiased"
         if dml["debiased"] else "DML-CMR", _f(dml["coef"]),
         f"[{_f(dml['lower'])}, {_f(dml['upper'])}]" if dml["lower"] is not None else "no interval"),
        ("DML-CMR: the plug-in (f̂'s own average slope)", _f(dml["plug_in"]["estimate"]),
         f"[{_f(dml['plug_in']['ci_lower'])}, {_f(dml['plug_in']['ci_upper'])}] (delta method, nuisances held fixed)"
         if dml["plug_in"]["ci_lower"] is not None else "no interval"),
    ]
    lines = ["| step | estimate | 95 % interval / note |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in table]
    run = data["run"]
    lines.append(f"\n*`python -m bench.card_exercise`, {run['date']} (`bench/results/teaching/card.json`).*")
    return "\n".join(lines)


@block("teaching:card-plausible")
def card_plausible(rows) -> str:
    """Conley, Hansen & Rossi's intervals for Card (bench/results/teaching/card-plausible.json)."""
    data = rows.json("teaching/card-plausible.json")
    lines = ["| δ (largest direct effect, log wage) | union of 95 % intervals | local to zero: estimate [95 %] |",
             "|---|---|---|"]
    for r in data["table"]:
        lines.append(f"| {r['delta']:g} | [{_f(r['union lower'])}, {_f(r['union upper'])}] | "
                     f"{_f(r['local-to-zero estimate'])} [{_f(r['local-to-zero lower'])}, {_f(r['local-to-zero upper'])}] |")
    lines.append(f"\nFirst-stage slope π {_f(data['first_stage'])}, reduced form {_f(data['reduced_form'])}. The union "
                 f"of intervals reaches 0 at **δ = {data['breakdown_union']:.4f}** "
                 f"({data['breakdown_union'] / data['reduced_form']:.0%} of the reduced form), the local-to-zero "
                 f"interval at **δ = {data['breakdown_local']:.4f}** (`bench/results/teaching/card-plausible.json`).")
    return "\n".join(lines)


@block("teaching:rhc")
def rhc_tables(rows) -> str:
    """The proximal RHC exercise: strength and estimates (rhc-exercise.json; rhc-effects*.csv)."""
    data = rows.json("teaching/rhc-exercise.json")
    st = data["strength"]
    lines = ["| outcome proxy W | F of the treatment proxies Z (given A, X) | partial R² |", "|---|---|---|"]
    lines += [f"| {w} | {v['f_stat']:,.1f} | {v['partial_r2']:.3f} |" for w, v in st["per_proxy"].items()]
    lines.append(f"\nCragg–Donald F (both W at once): **{st['cragg_donald_f']:.1f}** ({st['level']}).\n")
    lines += ["| estimate | ATE (days alive in 30) | 95 % interval |", "|---|---|---|"]
    for name, key in (("regression of Y on A and X", "regression"),
                      ("the same, the four proxies added as covariates", "regression_with_proxies"),
                      ("linear proximal 2SLS", "p2sls"), ("proximal 2SLS, the proxies' roles swapped", "p2sls_swapped")):
        e = data[key]
        lines.append(f"| {name} | {_f(e['coef'], 2)} | [{_f(e['lower'], 2)}, {_f(e['upper'], 2)}] |")
    effects = rows.csv("rhc-effects.csv")
    boot = rows.csv("rhc-effects-boot.csv")
    for frame, kind in ((effects[~fact(effects["method"], "linear_iv")], None), (boot[boot["bootstrap"].notna()], "boot")):
        for _, r in frame.iterrows():
            second = ("the learner's own f, bootstrap" if kind else "spline f")
            name = title(r["method"])
            lines.append(f"| {name} ({r['learner']}, {second}) | {_f(r['estimate'], 2)} | "
                         f"[{_f(r['lower'], 2)}, {_f(r['upper'], 2)}] |")
    lines.append(f"\n*`python -m bench.card_exercise` ({data['run']['date']}) and `python -m bench.rhc_effects` "
                 "(`bench/results/rhc-effects.csv`, `rhc-effects-boot.csv`).*")
    today = rows.csv("rhc-effects-31.csv")
    weak = today[today["weak"].astype(str).str.lower() == "true"]
    if len(weak):
        named = _and([prose(m) for m in weak["method"]])
        lines.append(f"\nToday the tool prints no interval for {named} on these data: their fits in "
                     "`bench/results/rhc-effects-31.csv` (each learner's own f) are flagged weakly identified "
                     "(docs/coverage.md, \"RHC: every method\"). The intervals of those methods above come from "
                     "fits made before the flag.")
    return "\n".join(lines)


@block("teaching:rhc-limits")
def rhc_limits(rows) -> str:
    """What the RHC table's rows say of the effect's sign: estimates with the published roles, the intervals
    that contain 0, the swapped roles, and the methods whose fits today print no interval (the flag)."""
    data = rows.json("teaching/rhc-exercise.json")
    estimates = [(name, data[key]) for name, key in (("the regression", "regression"),
                 ("the regression with the proxies", "regression_with_proxies"), ("proximal 2SLS", "p2sls"))]
    effects, boot = rows.csv("rhc-effects.csv"), rows.csv("rhc-effects-boot.csv")
    for frame, second in ((effects[~is_method(effects["method"], "2sls")], "spline f"),
                          (boot[boot["bootstrap"].notna()], "its own f, bootstrap")):
        estimates += [(f"{title(r['method'])} ({second})", {"coef": r["estimate"], "lower": r["lower"],
                                                          "upper": r["upper"]}) for _, r in frame.iterrows()]
    negative = sum(e["coef"] < 0 for _, e in estimates)
    zero = [name for name, e in estimates if e["lower"] <= 0 <= e["upper"]]
    swapped = data["p2sls_swapped"]
    today = rows.csv("rhc-effects-31.csv")
    weak = [prose(m) for m in today.loc[today["weak"].astype(str).str.lower() == "true", "method"]]
    return (f"with the published roles {negative} of the {len(estimates)} estimates in the table are negative; "
            + (f"the interval of {_and(zero)} contains 0; " if zero else "no interval contains 0; ")
            + f"with the roles swapped proximal 2SLS gives {_f(swapped['coef'], 2)} "
            f"[{_f(swapped['lower'], 2)}, {_f(swapped['upper'], 2)}]"
            + (f"; and today the tool prints no interval for {_and(weak)} on these data (weakly identified)"
               if weak else ""))


@block("teaching:weak-4")
def weak_table(rows) -> str:
    """The weak-instrument experiment with four instruments (weak-4-instruments.csv), with Monte-Carlo s.e."""
    from dmlcore.teaching import iv
    draws = inspect.signature(iv.weak_instruments).parameters["draws"].default
    t = rows.csv("teaching/weak-4-instruments.csv")
    lines = ["| median F | label | median bias / OLS's: 2SLS, LIML, Fuller | usual 2SLS interval covers | "
             "Fuller interval covers | AR set covers | CLR set covers | AR set unbounded | AR set empty |",
             "|---|---|---|---|---|---|---|---|---|"]
    for _, r in t.iterrows():
        lines.append(f"| {r['median F']:.1f} | {r['strength']} | {100 * r['relative median bias']:.0f} %, "
                     f"{100 * r['LIML relative median bias']:.0f} %, {100 * r['Fuller relative median bias']:.0f} % | "
                     f"{_cov(r['2SLS interval coverage'], draws)} | {_cov(r['Fuller interval coverage'], draws)} | "
                     f"{_cov(r['AR coverage'], draws)} | {_cov(r['CLR coverage'], draws)} | "
                     f"{100 * r['AR unbounded']:.0f} % | {100 * r['AR empty']:.1f} % |")
    lines.append(f"\n{draws} data sets of 500 rows at each strength; s.e.: the coverage's Monte-Carlo standard error, "
                 "in percentage points.")
    return "\n".join(lines)


@block("teaching:robust")
def robust_table(rows) -> str:
    """The Weak IV tab's robust section at its defaults (robust-heteroskedastic.csv, robust-clustered.csv)."""
    from dmlcore.teaching import robust
    draws = inspect.signature(robust.robust_inference).parameters["draws"].default
    lines = ["| errors | covariance | median effective F | effective F < 10 | AR set covers −1 | AR set bounded |",
             "|---|---|---|---|---|---|"]
    for errors in robust.ERRORS:
        for _, r in rows.csv(f"teaching/robust-{errors}.csv").iterrows():
            lines.append(f"| {errors} | {r['covariance']} | {r['median effective F']:.1f} | "
                         f"{100 * r['share effective F < 10']:.0f} % | {_cov(r['AR coverage'], draws)} | "
                         f"{100 * r['AR bounded']:.0f} % |")
    lines.append(f"\n{draws} data sets per design (heteroskedastic: 500 rows; clustered: 40 markets of 25 rows); "
                 "s.e.: the coverage's Monte-Carlo standard error, in percentage points. With the homoskedastic "
                 "covariance the effective F is the usual first-stage F.")
    return "\n".join(lines)


@block("teaching:overid")
def overid_table(rows) -> str:
    """The Invalid IV tab's overidentification section at its defaults (overid.csv)."""
    from dmlcore.teaching import robust
    draws = inspect.signature(robust.overidentification).parameters["draws"].default
    lines = ["| instruments | Sargan rejects at 5 % | Hansen's J rejects at 5 % | median 2SLS | large-sample 2SLS |",
             "|---|---|---|---|---|"]
    for _, r in rows.csv("teaching/overid.csv").iterrows():
        lines.append(f"| {r['design']} | {100 * r['Sargan rejects']:.0f} % | {100 * r['Hansen J rejects']:.0f} % | "
                     f"{_f(r['median 2SLS'], 2)} | {_f(r['large-sample 2SLS'], 2)} |")
    lines.append(f"\n{draws} data sets of 500 rows per design; a share of {draws} has a Monte-Carlo s.e. of up to "
                 f"{100 * _se(0.5, draws):.0f} percentage points.")
    return "\n".join(lines)


@block("teaching:pliv")
def pliv_table(rows) -> str:
    """The shipped partially linear IV simulations (pliv-shipped.csv), with Monte-Carlo s.e."""
    t = rows.csv("teaching/pliv-shipped.csv")
    lines = ["| score | cross-fitting | mean of (θ̂ − θ)/se | sd | 95 % interval covers |", "|---|---|---|---|---|"]
    for _, r in t.iterrows():
        lines.append(f"| {r['score']} | {'yes' if r['cross-fitting'] else 'no'} | {_f(r['mean t'], 2)} | "
                     f"{r['sd t']:.2f} | {_cov(r['coverage'], int(r['sims']))} |")
    lines.append(f"\n{int(t['sims'].iloc[0]):,} data sets of 1,000 rows; s.e. in percentage points.")
    return "\n".join(lines)


# ------------------------------------------------------------------ figures inside docs/teaching.md's sentences
# Each is an inline block ``teaching:NAME`` (a few words inside a sentence, an Ask's expected answer
# included); the worksheets (dmlcore.teaching.worksheets) copy the blocks with the answers, so the same
# renderers check them.

def _by(frame, column: str):
    return frame.set_index(column)


def _mid(lo: float, hi: float, digits: int = 2, sep: str = " to ") -> str:
    return f"{_f(lo, digits)}{sep}{_f(hi, digits)}"


def _conf(rows):
    t = rows.csv("teaching/confounding.csv")
    return t[t["estimator"] == "OLS"], t[t["estimator"] == "2SLS"]


def _excl(rows):
    t = rows.csv("teaching/exclusion.csv")
    return t[t["estimator"] == "OLS"], t[t["estimator"] == "2SLS"]


def _weak_row(rows, which: str):
    t = rows.csv("teaching/weak-4-instruments.csv")
    if which == "first-above-10":
        return t[t["median F"] >= 10].iloc[0]
    return t.iloc[int(which)]


def _weak_draws() -> int:
    from dmlcore.teaching import iv
    return inspect.signature(iv.weak_instruments).parameters["draws"].default


def _robust_draws() -> int:
    from dmlcore.teaching import robust
    return inspect.signature(robust.robust_inference).parameters["draws"].default


def _prox(rows, name: str = "proximal.csv"):
    return _by(rows.csv(f"teaching/{name}"), "estimator")


def _orth(rows, perturbation: str, eps: float):
    t = rows.csv("teaching/orthogonality.csv")
    t = t[(t["perturbation"] == perturbation) & (t["eps"].round(6) == eps)]
    return t.set_index("method")["change"]


def _pliv(rows, score: str, crossfit: bool):
    t = rows.csv("teaching/pliv-shipped.csv")
    return t[(t["score"] == score) & (t["cross-fitting"] == crossfit)].iloc[0]


def _pct(p: float) -> str:
    return f"{100 * p:.1f} %"


def _three(x: float) -> str:
    """Three decimals below 1, three significant digits above (the Learn page's MSE style)."""
    return f"{x:.3f}" if abs(x) < 1 else f"{x:.3g}"


def _compare(rows, name: str):
    return _by(rows.csv(f"teaching/{name}.csv"), "method")


def _swap(rows, targets: str, draws: str) -> str:
    t = rows.csv("teaching/crossfit-swap.csv")
    return f"{t[(t['targets'] == targets) & (t['draws'] == draws)]['median'].iloc[0]:.3f}"


def _demand(rows, name: str = "demand.csv"):
    t = _by(rows.csv(f"teaching/{name}"), "fit")
    return {"regression": t.iloc[0], "2sls": t.iloc[1], "dml-cmr": t.iloc[2]}


def _bands(rows):
    t = rows.csv("teaching/demand-band-coverage.csv")
    fixed = t[t["ridge"] == t["ridge"].iloc[0]].reset_index(drop=True)
    return fixed, t[t["ridge"] != fixed["ridge"].iloc[0]]


def _flat_below(rows) -> str:
    """The first-stage F below which the band stops widening (less than 10 % wider at the next strength)."""
    fixed, _ = _bands(rows)
    w, f = fixed["mean width"], fixed["median first-stage F"]
    i = next(i for i in range(len(w) - 1) if w[i + 1] / w[i] < 1.1)
    return f"{f[i]:.0f}"


def _card(rows):
    return rows.json("teaching/card.json")


def _card_flag(card: dict) -> str:
    """Whether the weakly-identified flag fired on Card's DML-CMR fit, in words, with its F bar."""
    from dmlcore.inference.debiased_effect import WEAK_FIRST_STAGE_F

    f = card["linear"]["f_stat"]
    side = "below" if f < WEAK_FIRST_STAGE_F else "above"
    fired = ("so it fires: the debiased effect is printed without an interval, and the Anderson–Rubin set is the "
             "interval to read" if card["dml_cmr"]["weak"] else "and it does not fire")
    return f"(F {f:.1f}, {side} the flag's bar of {WEAK_FIRST_STAGE_F:g}), {fired}"


def _rhc(rows):
    return rows.json("teaching/rhc-exercise.json")


def _rhc_flexible(rows):
    effects = rows.csv("rhc-effects.csv")
    boot = rows.csv("rhc-effects-boot.csv")
    return [*effects[~fact(effects["method"], "linear_iv")].itertuples(), *boot[boot["bootstrap"].notna()].itertuples()]


def _demo(rows, method: str) -> str:
    return f"{_by(rows.csv('teaching/demo.csv'), 'method').loc[method, 'mse']:.3f}"


VALUES = {
    # session 1: IV and LATE (wald.csv, late.csv, late-selection.csv)
    "wald-ratio": lambda r: _f(_by(r.csv("teaching/wald.csv"), "estimate").loc["Wald ratio", "slope"], 2),
    "wald-2sls": lambda r: _f(_by(r.csv("teaching/wald.csv"), "estimate").loc["2SLS", "slope"], 2),
    "wald-ols": lambda r: _f(_by(r.csv("teaching/wald.csv"), "estimate").loc["OLS", "slope"], 2),
    "late-ate": lambda r: _f(r.csv("teaching/late-selection.csv")["ate"].iloc[0], 2),
    "late-late": lambda r: _f(r.csv("teaching/late-selection.csv")["late"].iloc[0], 2),
    "late-wald": lambda r: _f(_by(r.csv("teaching/late.csv"), "estimator").loc["Wald", "median"], 2),
    "late-naive": lambda r: _f(_by(r.csv("teaching/late.csv"), "estimator").loc["treated minus untreated", "median"], 2),
    "late-att": lambda r: _f(r.csv("teaching/late-selection.csv")["att"].iloc[0], 2),
    "late-gap": lambda r: _f(r.csv("teaching/late-selection.csv")["baseline_gap"].iloc[0], 2),
    # confounding.csv
    "conf-ols": lambda r: (lambda o: f"{_f(o['median'].iloc[0], 2)} at ρ = {o['rho'].iloc[0]:g}, "
                           + ", ".join(_f(v, 2) for v in o["median"].iloc[1:-1])
                           + f", {_f(o['median'].iloc[-1], 2)} at ρ = {o['rho'].iloc[-1]:g}")(_conf(r)[0]),
    "conf-2sls": lambda r: (lambda t: f"between {_f(t['median'].min(), 2)} and {_f(t['median'].max(), 2)}")(_conf(r)[1]),
    "conf-sd-2sls": lambda r: _f(_conf(r)[1]["sd"].mean()),
    "conf-sd-ols": lambda r: _f(_conf(r)[0]["sd"].mean()),
    # weak-4-instruments.csv
    "weak-f10": lambda r: f"{_weak_row(r, 'first-above-10')['median F']:.1f}",
    "weak-f10-covers": lambda r: (lambda p: f"{_pct(p)} (s.e. {100 * _se(p, _weak_draws()):.1f} %)")(
        _weak_row(r, "first-above-10")["2SLS interval coverage"]),
    "weak-f-weakest": lambda r: f"{_weak_row(r, '0')['median F']:.1f}",
    "weak-unbounded-weakest": lambda r: f"{100 * _weak_row(r, '0')['AR unbounded']:.0f} %",
    "weak-f-second": lambda r: f"{_weak_row(r, '1')['median F']:.1f}",
    "weak-1-tf-range": lambda r: (lambda t: f"{_pct(t['tF coverage'].min())} to {_pct(t['tF coverage'].max())}")(r.csv("teaching/weak-1-instrument.csv")),
    "weak-1-2sls-weakest": lambda r: (lambda t: f"{_pct(t['2SLS interval coverage'].iloc[0])} at F {t['median F'].iloc[0]:.1f}")(r.csv("teaching/weak-1-instrument.csv")),
    "weak-liml-weakest": lambda r: f"{100 * abs(_weak_row(r, '0')['LIML relative median bias']):.0f} %",
    "weak-2sls-bias-weakest": lambda r: f"{100 * _weak_row(r, '0')['relative median bias']:.0f} %",
    # robust-heteroskedastic.csv, robust-clustered.csv, overid.csv
    **{f"robust-{e}-f": (lambda r, e=e: (lambda t: f"{t['median effective F'].iloc[0]:.1f} (homoskedastic) against "
                                        f"{t['median effective F'].iloc[1]:.1f}")(r.csv(f"teaching/robust-{e}.csv")))
       for e in ("heteroskedastic", "clustered")},
    **{f"robust-{e}-ar": (lambda r, e=e: (lambda t, n: f"{_cov(t['AR coverage'].iloc[0], n)} (homoskedastic) against "
                                         f"{_cov(t['AR coverage'].iloc[1], n)}")(r.csv(f"teaching/robust-{e}.csv"), _robust_draws()))
       for e in ("heteroskedastic", "clustered")},
    "overid-invalid": lambda r: (lambda t: f"Sargan in {100 * t.loc['invalid', 'Sargan rejects']:.0f} %, Hansen's J in "
                                 f"{100 * t.loc['invalid', 'Hansen J rejects']:.0f} %")(_by(r.csv("teaching/overid.csv"), "design")),
    "overid-alike": lambda r: (lambda t: f"Sargan in {100 * t.loc['all invalid', 'Sargan rejects']:.0f} %, Hansen's J in "
                               f"{100 * t.loc['all invalid', 'Hansen J rejects']:.0f} %, while the 2SLS median is "
                               f"{_f(t.loc['all invalid', 'median 2SLS'], 2)}")(_by(r.csv("teaching/overid.csv"), "design")),
    # exclusion.csv
    "excl-2sls": lambda r: (lambda t: ", ".join(_f(v, 2) for v in t["median"]) + " at δ = "
                            + ", ".join(f"{d:g}" for d in t["direct effect"]))(_excl(r)[1]),
    "excl-ols": lambda r: (lambda o: _mid(o["median"].iloc[0], o["median"].iloc[-1]))(_excl(r)[0]),
    "excl-worse": lambda r: (lambda o, t: f"{min(d for d, a, b in zip(t['direct effect'], t['median'], o['median']) if abs(a + 1) > abs(b + 1)):g}")(*_excl(r)),
    "excl-2sls-last": lambda r: _f(_excl(r)[1]["median"].iloc[-1], 2),
    # forbidden.csv
    **{f"forbidden-{m}-{k}": (lambda r, m=m, k=k: (lambda s: f"{s.loc[m, 'mse']:.3f}" if k == "mse" else f"{s.loc[m, 'slope ratio']:.2f}")(_by(r.csv("teaching/forbidden.csv"), "method")))
       for m in ("regression", "forbidden", "two-stage") for k in ("mse", "slope")},
    # Card (card.json, card-plausible.json)
    "card-f": lambda r: f"{_card(r)['linear']['f_stat']:.1f}",
    "card-effective-f": lambda r: f"{_card(r)['linear']['effective_f']:.1f}",
    "card-tf": lambda r: (lambda t: f"[{_f(t['lower'])}, {_f(t['upper'])}]" if t["lower"] is not None else "the whole line")(_card(r)["linear"]["tf"]),
    "card-tf-critical": lambda r: f"{_card(r)['linear']['tf']['critical']:.2f}",
    "card-2sls": lambda r: _f(_card(r)["linear"]["tsls"]["coef"]),
    "card-2sls-2": lambda r: _f(_card(r)["linear"]["tsls"]["coef"], 2),
    "card-ols": lambda r: _f(_card(r)["linear"]["ols"]["coef"]),
    "card-2sls-ci": lambda r: (lambda t: f"[{_f(t['lower'])}, {_f(t['upper'])}]")(_card(r)["linear"]["tsls"]),
    "card-ar": lambda r: (lambda a: f"[{_f(a['lower'])}, {_f(a['upper'])}]" if a["shape"] == "interval" else a["shape"])(_card(r)["linear"]["ar"]),
    "card-plug-in": lambda r: _f(_card(r)["dml_cmr"]["plug_in"]["estimate"]),
    "card-debiased": lambda r: _f(_card(r)["dml_cmr"]["coef"]),
    "card-flag": lambda r: _card_flag(_card(r)),
    "card-first-stage": lambda r: _f(r.json("teaching/card-plausible.json")["first_stage"]),
    "card-reduced-form": lambda r: _f(r.json("teaching/card-plausible.json")["reduced_form"]),
    "card-breakdown-union": lambda r: f"{r.json('teaching/card-plausible.json')['breakdown_union']:.4f}",
    "card-breakdown-union-pct": lambda r: f"{100 * r.json('teaching/card-plausible.json')['breakdown_union']:.1f} %",
    "card-breakdown-local": lambda r: f"{r.json('teaching/card-plausible.json')['breakdown_local']:.4f}",
    # proximal.csv, proximal-kappa-0.2.csv
    "prox-y-a": lambda r: _f(_prox(r).loc["Y on A", "median"], 2),
    "prox-y-aw": lambda r: _f(_prox(r).loc["Y on A and W", "median"], 2),
    "prox-2sls": lambda r: _f(_prox(r).loc["proximal 2SLS", "median"], 2),
    "prox-2sls-iqr": lambda r: (lambda s: _mid(s["q25"], s["q75"]))(_prox(r).loc["proximal 2SLS"]),
    "prox-noise": lambda r: _f(_prox(r).iloc[3]["median"], 2),
    "prox-noise-iqr": lambda r: (lambda s: _mid(s["q25"], s["q75"]))(_prox(r).iloc[3]),
    "prox-kappa": lambda r: _f(_prox(r, "proximal-kappa-0.2.csv").loc["proximal 2SLS", "median"], 2),
    # RHC (rhc-exercise.json, rhc-effects*.csv)
    "rhc-cd-f": lambda r: f"{_rhc(r)['strength']['cragg_donald_f']:.1f}",
    "rhc-regression": lambda r: _f(_rhc(r)["regression"]["coef"], 2),
    "rhc-proxies-as-covariates": lambda r: _f(_rhc(r)["regression_with_proxies"]["coef"], 2),
    "rhc-p2sls": lambda r: _f(_rhc(r)["p2sls"]["coef"], 2),
    "rhc-p2sls-ci": lambda r: (lambda e: f"[{_f(e['lower'], 2)}, {_f(e['upper'], 2)}]")(_rhc(r)["p2sls"]),
    "rhc-swapped": lambda r: (lambda e: f"{_f(e['coef'], 2)} [{_f(e['lower'], 2)}, {_f(e['upper'], 2)}]")(_rhc(r)["p2sls_swapped"]),
    "rhc-flexible-range": lambda r: (lambda v: _mid(min(v), max(v)))([e.estimate for e in _rhc_flexible(r)]),
    "rhc-flexible-heldout": lambda r: (lambda v: _mid(min(v), max(v), 3, "–"))([e.heldout for e in _rhc_flexible(r)]),
    "rhc-2sls-heldout": lambda r: _f(_by(r.csv("rhc-effects.csv"), "method").loc["2sls", "heldout"]),
    # session 3: orthogonality.csv, pliv-*.csv
    "orth-s-0.1": lambda r: f"{_orth(r, 's', 0.1)['dml-cmr']:.2f}",
    "orth-s-0.2": lambda r: f"{_orth(r, 's', 0.2)['dml-cmr']:.2f}",
    "orth-shift": lambda r: " / ".join(f"{_orth(r, 'shift', 0.1)[m]:.2f}" for m in ("naive", "ce-dml-cmr", "dml-cmr")),
    "orth-widen": lambda r: " / ".join(f"{_orth(r, 'widen', 0.1)[m]:.2f}" for m in ("naive", "ce-dml-cmr", "dml-cmr")),
    "pliv-slope-orthogonal": lambda r: f"{_by(r.csv('teaching/pliv-second-order.csv'), 'score').loc['orthogonal', 'slope'].iloc[0]:.2f}",
    "pliv-slope-naive": lambda r: f"{_by(r.csv('teaching/pliv-second-order.csv'), 'score').loc['naive', 'slope'].iloc[0]:.2f}",
    "pliv-naive-t": lambda r: _f(_pliv(r, "naive", True)["mean t"], 2),
    "pliv-naive-t-abs": lambda r: f"{abs(_pliv(r, 'naive', True)['mean t']):.1f}",
    "pliv-naive-covers": lambda r: _pct(_pliv(r, "naive", True)["coverage"]),
    "pliv-naive-sd": lambda r: f"{_pliv(r, 'naive', True)['sd t']:.2f}",
    "pliv-orth-sd": lambda r: f"{_pliv(r, 'orthogonal', True)['sd t']:.2f}",
    "pliv-orth-covers": lambda r: _pct(_pliv(r, "orthogonal", True)["coverage"]),
    "pliv-orth-t": lambda r: _f(_pliv(r, "orthogonal", True)["mean t"], 2),
    "pliv-orth-se": lambda r: (lambda p: f"{100 * _se(p['coverage'], int(p['sims'])):.1f}")(_pliv(r, "orthogonal", True)),
    "pliv-orth-se-live": lambda r: f"{100 * _se(_pliv(r, 'orthogonal', True)['coverage'], 100):.1f}",
    "pliv-orth-covers-no-crossfit": lambda r: _pct(_pliv(r, "orthogonal", False)["coverage"]),
    # compare-*.csv, crossfit-swap.csv
    **{f"{name}-{m}": (lambda r, name=name, m=m: _three(_compare(r, name).loc[m, "median"]))
       for name in ("compare-simple", "compare-overfit") for m in ("naive", "ce-dml-cmr", "dml-cmr")},
    **{f"{name}-wins": (lambda r, name=name: (lambda s: f"{s.loc['dml-cmr', 'lowest MSE on']} of {s.loc['dml-cmr', 'draws']}")(_compare(r, name)))
       for name in ("compare-simple", "compare-overfit")},
    "swap-both-crossfitted": lambda r: _swap(r, "cross-fitted", "cross-fitted"),
    "swap-in-sample-s": lambda r: _swap(r, "in-sample", "cross-fitted"),
    "swap-in-sample-draws": lambda r: _swap(r, "cross-fitted", "in-sample"),
    "swap-both-in-sample": lambda r: _swap(r, "in-sample", "in-sample"),
    "reps-spread-1": lambda r: _three(_by(r.csv("teaching/crossfit-repeated.csv"), "R")["split spread"].iloc[0]),
    "reps-spread-3": lambda r: _three(_by(r.csv("teaching/crossfit-repeated.csv"), "R")["split spread"].iloc[-1]),
    # demand.csv, demand-rho-0.csv, demand-band-coverage.csv
    "demand-truth": lambda r: _f(_demand(r)["dml-cmr"]["true slope"], 1),
    "demand-regression": lambda r: f"{_demand(r)['regression']['slope']:+.1f}".replace("-", "−"),
    "demand-regression-rho-0": lambda r: _f(_demand(r, "demand-rho-0.csv")["regression"]["slope"], 1),
    "demand-2sls": lambda r: _f(_demand(r)["2sls"]["slope"], 1),
    "demand-dml-cmr": lambda r: _f(_demand(r)["dml-cmr"]["slope"], 1),
    "demand-mse": lambda r: (lambda d: f"regression {d['regression']['mse']:.3f}, 2SLS {d['2sls']['mse']:.3f}, "
                             f"DML-CMR {d['dml-cmr']['mse']:.3f}")(_demand(r)),
    "demand-rmse-tickets": lambda r: f"{math.sqrt(_demand(r)['dml-cmr']['mse']) * _y_std():.0f}",
    "band-coverage-range": lambda r: (lambda f: f"{_pct(f['mean coverage'].min())} to {_pct(f['mean coverage'].max())}")(_bands(r)[0]),
    "band-f-range": lambda r: (lambda f: f"F {f['median first-stage F'].max():,.0f} down to F {f['median first-stage F'].min():.1f}")(_bands(r)[0]),
    "band-width-range": lambda r: (lambda f: f"{f['mean width'].iloc[0]:,.0f} to {f['mean width'].iloc[-1]:,.0f}")(_bands(r)[0]),
    "band-flat-below": _flat_below,
    "band-small-penalty": lambda r: (lambda f, s: f"{s['mean width'].iloc[0] / f['mean width'].iloc[-1]:.0f} times wider at F "
                                     f"{s['median first-stage F'].iloc[0]:.1f} ({s['mean width'].iloc[0]:,.0f})")(*_bands(r)),
    "band-weakest-covers": lambda r: (lambda f: f"{_pct(f['mean coverage'].iloc[-1])} at F = {f['median first-stage F'].iloc[-1]:.1f}")(_bands(r)[0]),
    # demo.csv
    **{f"demo-{m}": (lambda r, m=m: _demo(r, m)) for m in ("dml-cmr", "naive", "2sls", "regression")},
}


def _y_std() -> float:
    from dmlcore.data.simulate import Y_STD
    return Y_STD


for _name, _render in VALUES.items():
    block(f"teaching:{_name}")(_render)
