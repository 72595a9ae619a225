"""The Learn page's and the teaching docs' figures (docs/teaching.md, docs/class.md): the derived
table ``bench/results/teaching/measured.csv``. Blocks for those docs register here the same way
(``@block("teaching:...")`` reading bench/results/teaching/*.csv)."""

from __future__ import annotations

from dmlcore.teaching.measured import measured

from .registry import derived_file


@derived_file("bench/results/teaching/measured.csv")
def measured_csv(rows) -> str:
    """The Learn page's summary of the benchmark rows (dmlcore.teaching.measured), as bench/teaching.py writes it."""
    return measured(folder=rows.folder).to_csv(index=False)


# ------------------------------------------------------------------ docs/teaching.md's tables and answer keys
import inspect  # noqa: E402
import math  # noqa: E402

from .registry import block  # noqa: E402


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
    for frame, kind in ((effects[effects["method"] != "2sls"], None), (boot[boot["bootstrap"].notna()], "boot")):
        for _, r in frame.iterrows():
            second = ("the learner's own f, bootstrap" if kind else "spline f")
            name = {"sieve-2sls": "Sieve 2SLS", "dml-cmr": "DML-CMR", "ce-dml-cmr": "CE-DML-CMR",
                    "naive": "naive plug-in"}[r["method"]]
            lines.append(f"| {name} ({r['learner']}, {second}) | {_f(r['estimate'], 2)} | "
                         f"[{_f(r['lower'], 2)}, {_f(r['upper'], 2)}] |")
    lines.append(f"\n*`python -m bench.card_exercise` ({data['run']['date']}) and `python -m bench.rhc_effects` "
                 "(`bench/results/rhc-effects.csv`, `rhc-effects-boot.csv`).*")
    return "\n".join(lines)


@block("teaching:weak-4")
def weak_table(rows) -> str:
    """The weak-instrument experiment with four instruments (weak-4-instruments.csv), with Monte-Carlo s.e."""
    from dmlcore.teaching import iv
    draws = inspect.signature(iv.weak_instruments).parameters["draws"].default
    t = rows.csv("teaching/weak-4-instruments.csv")
    lines = ["| median F | label | 2SLS median bias / OLS's | usual 2SLS interval covers | AR set covers | "
             "AR set unbounded | AR set empty |", "|---|---|---|---|---|---|---|"]
    for _, r in t.iterrows():
        lines.append(f"| {r['median F']:.1f} | {r['strength']} | {100 * r['relative median bias']:.0f} % | "
                     f"{_cov(r['2SLS interval coverage'], draws)} | {_cov(r['AR coverage'], draws)} | "
                     f"{100 * r['AR unbounded']:.0f} % | {100 * r['AR empty']:.1f} % |")
    lines.append(f"\n{draws} data sets of 500 rows at each strength; s.e.: the coverage's Monte-Carlo standard error, "
                 "in percentage points.")
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
