"""Each Learn experiment as a notebook (issue 47): every notebook is executed and gives the numbers its tab
shows, to the digits the tab shows them, computed by the tab's own function with the same settings; every
notebook is valid nbformat 4 JSON whose code compiles.

The slow experiments run small (fewer data sets, fewer rows: settings the notebook accepts, the tab's function
called with the same ones), so the test proves that the notebook is the page's computation, not that the big
run is reproduced. The three that cannot be made small (Card's linear steps, RHC's, the ticket-demand fits) are
computed once per suite: both sides call the same function with the same arguments and get one result (:func:`once`); a
notebook that calls it with other arguments computes afresh and differs."""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
import pytest

from dmlcore.errors import DMLCoreError
from dmlcore.teaching import notebooks

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run(name: str, params: dict | None = None) -> tuple[dict, str]:
    """Execute the notebook's code cells in order, as Jupyter would: (namespace, printed text)."""
    nb = notebooks.notebook(name, params)
    namespace, out = {}, io.StringIO()
    with contextlib.redirect_stdout(out):
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                exec(compile(cell["source"], f"<{name}>", "exec"), namespace)   # noqa: S102
    return namespace, out.getvalue()


# --- what the page shows, in the page's own formatting -------------------------------------------------------

def num(x, digits: int = 2) -> str:
    """A number as the page writes it (dashboard.learn.common.num), None as the page's "none"."""
    from dashboard.learn.common import num as page_num
    return "none" if x is None else page_num(float(x), digits)


def shown(result, digits: int):
    """Every number of a result at ``digits`` decimals, the page's way; timings left out (they differ from
    one run to the next)."""
    if isinstance(result, dict):
        return {k: shown(v, digits) for k, v in result.items() if "seconds" not in str(k)}
    if isinstance(result, pd.DataFrame):
        keep = [c for c in result.columns if "seconds" not in str(c)]
        return {"columns": keep, "rows": [shown(list(row), digits) for row in result[keep].itertuples(index=False)]}
    if isinstance(result, (list, tuple, np.ndarray)):
        return [shown(v, digits) for v in result]
    if hasattr(result, "summary") and hasattr(result, "params"):                 # an Experiment
        return {"summary": shown(result.summary, digits), "params": shown(result.params, digits),
                "truth": shown(result.truth, digits)}
    if isinstance(result, (bool, np.bool_, str)) or result is None:
        return result
    if isinstance(result, (int, float, np.integer, np.floating)):
        return "nan" if np.isnan(result) else num(result, digits)
    return repr(result)


NUMBER = re.compile(r"[-−]?(?:\d+\.\d*|\.\d+|\d+)(?:e[-+]?\d+)?")


def printed_at(text: str, value: float, digits: int) -> bool:
    """Whether the notebook's printout has ``value`` at the page's ``digits``."""
    return any(num(float(m.replace("−", "-")), digits) == num(value, digits) for m in NUMBER.findall(text))


_ONCE: dict = {}


@pytest.fixture
def once(monkeypatch):
    """Make ``module.function`` compute once per suite for each set of arguments: the notebook and the page
    calling it alike share one result; other arguments compute afresh."""
    def patch(module, function: str):
        original = getattr(module, function)

        def shared(*args, **kwargs):
            key = (module.__name__, function, args, tuple(sorted(kwargs.items())))
            if key not in _ONCE:
                _ONCE[key] = original(*args, **kwargs)
            return _ONCE[key]
        monkeypatch.setattr(module, function, shared)
    return patch


# --- each notebook beside its tab ------------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    params: dict                       # the notebook's settings (small ones for a slow experiment)
    page: Callable                     # the tab's function with the same settings
    shows: Callable                    # result -> [(value, digits)]: the numbers the tab writes
    var: str | tuple = "exp"           # the notebook's name for the result (names: a tuple of results)
    digits: int = 2                    # the finest digits the tab shows of this experiment


def _iv(name):
    return getattr(__import__("dashboard.learn.iv", fromlist=["x"]), name)


def _page(module: str, name: str):
    return getattr(__import__(f"dashboard.learn.{module}", fromlist=["x"]), name)


def _teaching(module: str):
    return __import__(f"dmlcore.teaching.{module}", fromlist=["x"])


def _rows(exp, key, column):
    return exp.summary.set_index(key)[column]


CASES = [
    Case("wald", dict(rho=0.5, seed=3), lambda: _iv("wald_exp")(0.5, 3),
         lambda e: [(_rows(e, "estimate", "slope")[k], 2) for k in ("Wald ratio", "2SLS", "OLS")] + [(e.truth, 2)]),
    Case("late", dict(compliers=0.6, effect_always=2.0), lambda: _iv("late_exp")(0.6, 2.0),
         lambda e: [(e.params[k], 2) for k in ("ate", "late", "att", "baseline_gap")]
         + [(_rows(e, "estimator", "median")[k], 2) for k in ("Wald", "treated minus untreated")]),
    Case("confounding", dict(pi=0.5, n=100), lambda: _page("confounding", "confounding_exp")(0.5, 100),
         lambda e: [(v, 2) for v in e.summary["median"]] + [(v, 3) for v in e.summary["sd"]], digits=3),
    Case("weak", dict(instruments=1, rho=0.5), lambda: _page("weak", "weak_exp")(1, 0.5),
         lambda e: [(v, 1) for v in e.summary["median F"]] + [(v, 2) for v in e.summary["median 2SLS"]]
         + [(v, 3) for c in ("2SLS interval coverage", "AR coverage", "tF coverage") for v in e.summary[c]],
         digits=3),
    Case("robust", dict(errors="clustered", draws=4),
         lambda: _teaching("robust").robust_inference("clustered", draws=4),
         lambda e: [(v, 1) for v in e.summary["median effective F"]] + [(v, 3) for v in e.summary["AR coverage"]]
         + [(out["effective F"], 1) for out in e.params["example"].values()], digits=3),
    Case("overid", dict(draws=3), lambda: _teaching("robust").overidentification(draws=3),
         lambda e: [(v, 2) for c in ("Sargan rejects", "Hansen J rejects", "median 2SLS") for v in e.summary[c]]),
    Case("exclusion", dict(pi=0.3), lambda: _page("exclusion", "exclusion_exp")(0.3),
         lambda e: [(v, 2) for c in ("median", "large-sample value") for v in e.summary[c]]),
    Case("forbidden", dict(sigma=0.5, n=300), lambda: _page("forbidden", "forbidden_exp")(0.5, 300),
         lambda e: [(v, 3) for v in e.summary["mse"]], digits=3),
    Case("card", {}, lambda: _page("card", "steps")(),
         lambda s: [(s[k]["coef"], 3) for k in ("first_stage", "reduced_form", "ols", "tsls", "fuller")]
         + [(s[k][e], 3) for k in ("tsls", "ar", "tf") for e in ("lower", "upper")]
         + [(s["f_stat"], 1), (s["effective_f"], 1)], var="s", digits=3),
    Case("card-dml-cmr", dict(folds=2), lambda: _teaching("card").dml_cmr(folds=2),
         lambda r: [(r[k], 3) for k in ("coef", "lower", "upper")]
         + [(r["plug_in"][k], 3) for k in ("estimate", "ci_lower", "ci_upper")], var="r", digits=3),
    Case("card-plausible", {}, lambda: _page("card", "sensitivity")(),
         lambda r: [(v, 3) for c in ("union lower", "union upper", "local-to-zero lower") for v in r["table"][c]]
         + [(r["breakdown_union"], 4), (r["breakdown_local"], 4)], var="r", digits=4),
    Case("proximal", dict(noise=0.5, kappa=0.2, n=500), lambda: _page("proximal", "proximal_exp")(0.5, 0.2, 500),
         lambda e: [(v, 2) for c in ("median", "q25", "q75") for v in e.summary[c]]),
    Case("rhc", {}, lambda: _page("rhc", "steps")(),
         lambda s: [(s[k][e], 2) for k in ("regression", "regression_with_proxies", "p2sls", "p2sls_swapped")
                    for e in ("coef", "lower", "upper")] + [(s["strength"]["cragg_donald_f"], 1)], var="s"),
    Case("pliv", {}, lambda: (_page("pliv", "shipped")(), _page("pliv", "control")()),
         lambda r: [(v, 3) for v in r[0].summary["coverage"]] + [(v, 2) for v in r[0].summary["mean t"]]
         + [(v, 2) for v in r[1].params["slopes"].values()], var=("exp", "control"), digits=3),
    Case("orthogonality", dict(n=200, seeds=1), lambda: _teaching("nuisance").orthogonality(n=200, seeds=1),
         lambda e: [(v, 2) for v in e.summary["change"]] + [(v, 1) for v in e.summary["order"].dropna()]),
    Case("crossfit", dict(setting="overfit", draws=1, n=200),
         lambda: _teaching("nuisance").compare_methods("overfit", draws=1, n=200),
         lambda e: [(v, 3) for c in ("median", "q25", "q75") for v in e.summary[c]], digits=3),
    Case("crossfit-repeated", dict(n=200, splits=2),
         lambda: _teaching("nuisance").repeated_crossfit("simple", n=200, splits=2),
         lambda e: [(v, 3) for c in ("split spread", "median MSE") for v in e.summary[c]], digits=3),
    Case("demand", dict(n=500, seed=1), lambda: _page("demand", "demand_fits")(1.0, 0.9, 500, 1, False),
         lambda r: [(f["slope"], 1) for f in r["fits"].values()] + [(f["mse"], 3) for f in r["fits"].values()]
         + [(r["true_slope"], 1), (r["f_stat"], 1)], var="r", digits=3),
]


def test_every_notebook_has_a_case():
    assert {c.name for c in CASES} == set(notebooks.EXPERIMENTS)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_notebook_gives_the_numbers_its_tab_shows(case, once, tmp_path, monkeypatch):
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path))        # no result prepared before class stands in for the page's
    once(_teaching("card"), "linear_steps")
    once(_teaching("demand"), "demand_fits")
    once(_teaching("rhc"), "proxy_steps")
    namespace, printed = run(case.name, case.params)
    names = case.var if isinstance(case.var, tuple) else (case.var,)
    mine, page = tuple(namespace[v] for v in names), case.page()
    mine = mine if isinstance(case.var, tuple) else mine[0]
    # every number the tab writes, at the tab's digits, from the notebook's result and from the tab's
    assert [num(v, d) for v, d in case.shows(mine)] == [num(v, d) for v, d in case.shows(page)]
    assert shown(mine, case.digits) == shown(page, case.digits)        # and the rest of the result alike
    missing = [num(v, d) for v, d in case.shows(mine) if v is not None and not printed_at(printed, v, d)]
    assert not missing, f"the {case.name} notebook does not print {missing}"


def test_a_notebook_that_drifts_from_its_tab_fails_the_comparison(monkeypatch):
    """The check above fails when a notebook's code is not the page's: here the Wald notebook with another seed."""
    case = next(c for c in CASES if c.name == "wald")
    recipe = notebooks.EXPERIMENTS["wald"]
    drifted = recipe.call.replace("seed={seed}", "seed={seed} + 1")
    monkeypatch.setitem(notebooks.EXPERIMENTS, "wald", notebooks.Recipe(**{**recipe.__dict__, "call": drifted}))
    namespace, _ = run("wald", case.params)
    assert shown(namespace["exp"], 2) != shown(case.page(), 2)


def test_a_slow_notebook_at_the_page_s_settings_calls_the_page_s_function_as_the_page_does():
    """Without its smaller settings a slow notebook's call is the page's (no default of the function retyped)."""
    assert "nuisance.orthogonality()" in notebooks.code("orthogonality")
    assert "robust.overidentification()" in notebooks.code("overid")
    assert "nuisance.repeated_crossfit('simple')" in notebooks.code("crossfit-repeated")
    assert "nuisance.orthogonality(n=200, seeds=1)" in notebooks.code("orthogonality", dict(n=200, seeds=1))
    text = notebooks.notebook("orthogonality", dict(seeds=1))["cells"][0]["source"]
    assert "Smaller than the page's run (seeds set here)" in text


def test_every_notebook_is_nbformat_4_and_its_code_compiles(tmp_path):
    paths = notebooks.write_all(tmp_path)
    assert {p.stem for p in paths} == set(notebooks.EXPERIMENTS) and len(paths) >= 14
    for path in paths:
        nb = json.loads(path.read_text())
        assert nb["nbformat"] == 4 and nb["nbformat_minor"] >= 5
        kinds = [c["cell_type"] for c in nb["cells"]]
        assert kinds[0] == "markdown" and "code" in kinds
        assert len({c["id"] for c in nb["cells"]}) == len(nb["cells"])
        source = "\n".join(c["source"] for c in nb["cells"] if c["cell_type"] == "code")
        compile(source, path.name, "exec")
        assert "from dmlcore" in source and source + "\n" == notebooks.code(path.stem)


def test_a_notebook_refuses_a_setting_it_does_not_have():
    with pytest.raises(DMLCoreError, match="no setting colour"):
        notebooks.notebook("wald", {"colour": 1})
    with pytest.raises(DMLCoreError, match="its settings are n, seeds"):
        notebooks.notebook("orthogonality", {"draws": 1})
    with pytest.raises(DMLCoreError, match="No notebook named 'nope'"):
        notebooks.notebook("nope")
