"""Each Learn experiment as a Jupyter notebook to take home: a short statement of what it shows and
the code that calls :mod:`dmlcore` with the tab's settings, so that running it prints the numbers
the tab shows (the same functions, the same seeds).

    python -m dmlcore.teaching.notebooks [--out notebooks] [--only NAME ...]

writes one ``NAME.ipynb`` per experiment (:data:`EXPERIMENTS`, the defaults of the Learn page);
the Learn page offers the same notebook, with the tab's current settings, as a download. The files
are plain nbformat 4 JSON, written without Jupyter; running them needs Jupyter (or any Python:
:func:`code` is the notebook's code as one script).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from dmlcore.errors import DMLCoreError


@dataclass(frozen=True)
class Recipe:
    title: str        # the Learn tab (and section) it reproduces
    intro: str        # Markdown: what the experiment shows
    call: str         # the call, with {name} for the settings
    show: str         # code that prints what the tab quotes, from `exp`
    defaults: dict    # the Learn page's default settings
    # keyword arguments of a slow experiment's function that run a smaller version of it (fewer data sets,
    # fewer rows): written into the call ({more}) only when given, so that at the page's settings the call is
    # the page's own and no default of the function is typed here
    smaller: tuple = ()


EXPERIMENTS = {
    "wald": Recipe(
        "IV and LATE: the Wald estimator", "One binary instrument on one simulated data set: the Wald ratio equals "
        "2SLS and estimates the effect −1; OLS is confounded by the hidden shock U (with ρ > 0, pulled up toward "
        "0).",
        "from dmlcore.teaching import iv\nexp = iv.wald(rho={rho}, seed={seed})",
        "print(exp.summary.to_string(index=False))\nprint('truth', exp.truth)", dict(rho=0.9, seed=0)),
    "late": Recipe(
        "IV and LATE: LATE", "With effects that differ between people, the Wald ratio estimates the compliers' "
        "effect (LATE), not the average effect (ATE).",
        "from dmlcore.teaching import iv\nexp = iv.late(compliers={compliers}, always=(1 - {compliers}) / 2, "
        "effect_always={effect_always})",
        "print(exp.summary.to_string(index=False))\nprint({{k: exp.params[k] for k in ('ate', 'late', 'att', "
        "'baseline_gap')}})", dict(compliers=0.4, effect_always=3.0)),
    "confounding": Recipe(
        "Confounding", "OLS and 2SLS over 200 data sets at each confounding strength ρ: OLS moves with ρ, 2SLS "
        "does not, and pays in variance.",
        "from dmlcore.teaching import iv\nexp = iv.confounding(pi={pi}, n={n})",
        "print(exp.summary.to_string(index=False))", dict(pi=1.0, n=500)),
    "weak": Recipe(
        "Weak IV", "500 data sets at each instrument strength. As the instrument weakens, the usual 2SLS interval "
        "covers the truth less and less often, while Anderson–Rubin and CLR keep their level; with several "
        "instruments 2SLS drifts toward OLS and LIML and Fuller are less biased (with one instrument LIML is 2SLS); "
        "with one instrument the tF interval of Lee et al. (2022) keeps its size.",
        "from dmlcore.teaching import iv\nexp = iv.weak_instruments(instruments={instruments}, rho={rho})",
        "import pandas as pd\npd.set_option('display.width', 200)\nprint(exp.summary.round(3).to_string(index=False))",
        dict(instruments=4, rho=0.9)),
    "robust": Recipe(
        "Weak IV: heteroskedastic or clustered errors", "The homoskedastic first-stage F and Anderson–Rubin set "
        "beside the effective F (Montiel Olea & Pflueger 2013) and the robust or cluster-robust AR set, over many "
        "simulated data sets (60 on the page), computed by dmlcore's linear-IV inference.",
        "from dmlcore.teaching import robust\nexp = robust.robust_inference({errors!r}{more})",
        "print(exp.summary.round(3).to_string(index=False))\nfor cov, out in exp.params['example'].items():\n"
        "    print(cov, round(out['effective F'], 1), out['AR pieces'])", dict(errors="heteroskedastic"),
        ("draws",)),
    "overid": Recipe(
        "Invalid IV: overidentification", "Three instruments, tested at 5 %: Sargan's test and Hansen's J reject "
        "most data sets when one instrument is invalid, about 5 % or fewer when all are valid, and hardly any when "
        "all are invalid alike: the test asks whether the instruments agree, not whether they are valid.",
        "from dmlcore.teaching import robust\nexp = robust.overidentification({more})",
        "print(exp.summary.round(3).to_string(index=False))", {}, ("draws",)),
    "exclusion": Recipe(
        "Invalid IV", "An instrument that also moves sales directly by δ: 2SLS tends to −1 + δ/π.",
        "from dmlcore.teaching import iv\nexp = iv.exclusion(pi={pi})", "print(exp.summary.to_string(index=False))",
        dict(pi=0.5)),
    "forbidden": Recipe(
        "Forbidden regression", "Plugging the predicted price into a nonlinear f learns a flattened curve; "
        "averaging f over the price given the instrument (two-stage) does not.",
        "from dmlcore.teaching import forbidden\nexp = forbidden.forbidden_regression(sigma={sigma}, n={n})",
        "print(exp.summary.to_string(index=False))", dict(sigma=0.8, n=1000)),
    "card": Recipe(
        "Card (1995), sections 1, 2 and 2b", "The return to schooling instrumented by growing up near a college: "
        "first stage, reduced form, OLS, 2SLS, the first-stage and effective F, Anderson–Rubin, Fuller, CLR "
        "and tF.",
        "from dmlcore.teaching import card\ns = card.linear_steps()",
        "for key in ('first_stage', 'reduced_form', 'ols', 'tsls', 'fuller', 'ar', 'clr', 'tf'):\n"
        "    print(key, s[key])\nprint('F', round(s['f_stat'], 1), 'effective F', round(s['effective_f'], 1))",
        {}),
    "card-dml-cmr": Recipe(
        "Card (1995), section 3: DML-CMR", "DML-CMR with gradient-boosting nuisances and a spline second stage on "
        "Card's data: its debiased effect (f̂'s average slope in schooling corrected by the weight ξ̂(C); with "
        "one binary instrument it estimates the linear slope 2SLS estimates, the tab's section 3) with its "
        "interval, and the plug-in beside it.",
        "from dmlcore.teaching import card\nr = card.dml_cmr({more})",
        "print('debiased', r['coef'], [r['lower'], r['upper']], r['why_not'] or '')\n"
        "print('plug-in', r['plug_in']['estimate'], [r['plug_in']['ci_lower'], r['plug_in']['ci_upper']])\n"
        "print('settings', r['settings'])", {}, ("folds",)),
    "card-plausible": Recipe(
        "Card (1995), section 5: plausibly exogenous", "How large a direct effect of growing up near a college "
        "would make the 95 % interval of the return to schooling reach 0 (Conley, Hansen & Rossi 2012): union of "
        "intervals and local to zero.",
        "from dmlcore.teaching import plausible\nr = plausible.card_sensitivity()",
        "t = r['table']   # the page's digits: delta as given, the intervals to 3 decimals\n"
        "shown = {{c: ('{{:g}}' if c == 'delta' else '{{:.3f}}').format for c in t}}\n"
        "print(t.to_string(index=False, formatters=shown))\n"
        "print('breakdown: union', round(r['breakdown_union'], 4), 'local to zero', round(r['breakdown_local'], 4))",
        {}),
    "proximal": Recipe(
        "Proximal learning", "Two kinds of proxies of U: with κ = 0, proximal 2SLS is centred near the effect −1 "
        "where the regressions are not; without Z the bridge is not identified; κ ≠ 0 (the price moves the "
        "outcome proxy) breaks it.",
        "from dmlcore.teaching import proximal\nexp = proximal.proximal(proxy_noise={noise}, kappa={kappa}, n={n})",
        "print(exp.summary.to_string(index=False))", dict(noise=1.0, kappa=0.0, n=1000)),
    "rhc": Recipe(
        "RHC (real data)", "Right heart catheterization and days alive in the first 30, with proxies of how sick "
        "a patient was: the proxies' strength (Cragg–Donald F) and the linear estimates.",
        "from dmlcore.teaching import rhc\ns = rhc.proxy_steps()",
        "print(s['strength'])\nfor key in ('regression', 'regression_with_proxies', 'p2sls', 'p2sls_swapped'):\n"
        "    print(key, s[key])", {}),
    "pliv": Recipe(
        "Orthogonality that works", "A partially linear IV model: an error in the nuisances moves the naive "
        "score's estimate at first order, the orthogonal score's only at second order (the shipped 1,000 "
        "simulations, and the positive control).",
        "from dmlcore.teaching import pliv\nexp = pliv.cached()\ncontrol = pliv.second_order()",
        "print(exp.summary.to_string(index=False))\nprint(control.params['slopes'])", {}),
    "orthogonality": Recipe(
        "Orthogonal score", "Perturb the nuisances by a known ε and refit the second "
        "stage: how far f̂ moves.",
        "from dmlcore.teaching import nuisance\nexp = nuisance.orthogonality({more})",
        "print(exp.summary.to_string(index=False))", {}, ("n", "seeds")),
    "crossfit": Recipe(
        "Cross-fitting", "The naive plug-in, CE-DML-CMR and DML-CMR on the same simulated data "
        "sets, median MSE and how often each was best.",
        "from dmlcore.teaching import nuisance\nexp = nuisance.compare_methods({setting!r}, draws={draws}{more})",
        "print(exp.summary.to_string(index=False))", dict(setting="simple", draws=20), ("n",)),
    "crossfit-repeated": Recipe(
        "Cross-fitting: repeated cross-fitting", "How much DML-CMR's f̂ depends on the random split, with R = 1 "
        "and with the median of R = 3 cross-fits.",
        "from dmlcore.teaching import nuisance\nexp = nuisance.repeated_crossfit('simple'{more})",
        "print(exp.summary.to_string(index=False))", {}, ("n", "splits")),
    "demand": Recipe(
        "Ticket demand", "The paper's IV benchmark: the regression that ignores the instrument, 2SLS and a fast "
        "DML-CMR (small gradient-boosting learners; with_naive adds the naive plug-in) fitted to one simulated data "
        "set, their MSE and the slope of the average demand curve.",
        "from dmlcore.teaching import demand\nr = demand.demand_fits({strength}, {rho}, {n}, {seed}, {with_naive})",
        "for name, fit in r['fits'].items():   # the page's digits: MSE to 3 significant digits, slopes to 1 decimal\n"
        "    print(name, 'MSE', f\"{{fit['mse']:.3g}}\", 'slope', round(fit['slope'], 1))\n"
        "print('true slope', round(r['true_slope'], 1), 'first-stage F', round(r['f_stat'], 1))",
        dict(strength=1.0, rho=0.9, n=1000, seed=0, with_naive=False)),
}


def _settings(name: str, params: dict | None) -> dict:
    if name not in EXPERIMENTS:
        raise DMLCoreError(f"No notebook named {name!r}; choose one of {', '.join(EXPERIMENTS)}.")
    recipe = EXPERIMENTS[name]
    unknown = set(params or {}) - set(recipe.defaults) - set(recipe.smaller)
    if unknown:
        raise DMLCoreError(f"The {name} notebook has no setting {', '.join(sorted(unknown))}; its settings are "
                           f"{', '.join((*recipe.defaults, *recipe.smaller)) or 'none'}.")
    return {**recipe.defaults, **(params or {})}


def _cells(name: str, params: dict | None) -> tuple[str, str, dict]:
    """The call and the printing code with the settings filled in, and the settings."""
    values = _settings(name, params)
    recipe = EXPERIMENTS[name]
    more = "".join(f", {key}={values[key]!r}" for key in recipe.smaller if key in values)
    call = recipe.call.format(**values, more=more).replace("(, ", "(")
    return call, recipe.show.format(**values), values


def code(name: str, params: dict | None = None) -> str:
    """The notebook's code (its cells in order) as one script."""
    call, show, _ = _cells(name, params)
    return call + "\n" + show + "\n"


def notebook(name: str, params: dict | None = None) -> dict:
    """The notebook of experiment ``name`` with the settings ``params`` (the page's defaults for the
    rest; a slow experiment's :attr:`Recipe.smaller` settings make it smaller than the page's), as
    nbformat 4 JSON (a dict)."""
    call, show, values = _cells(name, params)
    recipe = EXPERIMENTS[name]
    setting_text = ", ".join(f"{k} = {v}" for k, v in values.items()) or "the Learn page's"
    smaller = [k for k in recipe.smaller if k in values]
    same = ("The same functions and seeds as the page, so the numbers are the page's." if not smaller else
            f"Smaller than the page's run ({', '.join(smaller)} set here): the page's function with these settings.")
    cells = [
        ("markdown", f"# {recipe.title}\n\n{recipe.intro}\n\nFrom the dmlcore dashboard's **Learn** page "
                     f"(docs/teaching.md); settings: {setting_text}. {same}"),
        ("code", call),
        ("code", show),
    ]
    return {"cells": [{"cell_type": kind, "id": f"{name}-{i}", "metadata": {}, "source": text,
                       **({"execution_count": None, "outputs": []} if kind == "code" else {})}
                      for i, (kind, text) in enumerate(cells)],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def dumps(name: str, params: dict | None = None) -> str:
    return json.dumps(notebook(name, params), indent=1, ensure_ascii=False) + "\n"


def write_all(folder: Path, names=None) -> list[Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in names or EXPERIMENTS:
        path = folder / f"{name}.ipynb"
        path.write_text(dumps(name))
        out.append(path)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="notebooks", help="the folder to write into (default: notebooks)")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=list(EXPERIMENTS),
                        help="only these experiments")
    args = parser.parse_args(argv)
    for path in write_all(Path(args.out), args.only):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
