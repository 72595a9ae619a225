"""Every combination of the linear layer's options either fits or is refused in one line (issue 46).

A property test (hypothesis) over the options of ``python -m dmlcore fit`` that the linear IV methods read:
absorbed fixed effects (none, one, two columns) with or without covariates, weights, clusters one-way or
two-way, one or several instruments and endogenous treatments, each covariance, the small-sample conventions (``--small``,
``--fixef-k``, ``--cluster-df``), the method (2SLS, LIML, Fuller, GMM) and the regression table. The command runs in process: exit status 0 (a fit), or 2 with one line on stderr (a
refusal, a DMLCoreError); status 1 is an unexpected exception, a bug.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dmlcore import cli

METHODS = ("2sls", "liml", "fuller", "gmm-iv")
COVS = ("unadjusted", "robust", "robust-hc1", "clustered", "clustered-cr1")
ABSORB = (None, "unit", "year", "unit,year")
CLUSTERS = (None, "unit", "g", "g,year", "unit,year")


def _panel(units=25, periods=4, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = units * periods
    unit, year = np.repeat(np.arange(units), periods), np.tile(np.arange(periods), units)
    table = pd.DataFrame({"unit": unit, "year": year, "g": unit % 6, "w": rng.uniform(0.5, 2.0, n)})
    for name in ("z1", "z2", "x1", "x2"):
        table[name] = rng.normal(size=n) + 0.2 * (unit % 3)
    u = rng.normal(size=n)
    table["d"] = table.z1 + 0.5 * table.z2 + 0.3 * table.x1 + u + 0.1 * unit
    table["d2"] = table.z2 - 0.4 * table.z1 + 0.5 * u + rng.normal(size=n)
    table["y"] = 1.5 * table.d + table.x1 - table.x2 + u + 0.05 * year + rng.normal(size=n)
    return table


@pytest.fixture(scope="module")
def panel_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("panel") / "panel.csv"
    _panel().to_csv(path, index=False)
    return path


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(argv)
    return status, err.getvalue()



@settings(max_examples=35, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(METHODS), covariates=st.integers(0, 2), instruments=st.integers(1, 2),
       treatments=st.integers(1, 2),
       absorb=st.sampled_from(ABSORB), weights=st.booleans(), cov=st.sampled_from(COVS),
       cluster=st.sampled_from(CLUSTERS), table=st.booleans(), small=st.booleans(),
       fixef_k=st.sampled_from((None, "full", "nested")), cluster_df=st.sampled_from((None, "conventional", "min")))
def test_every_option_combination_fits_or_is_refused_in_one_line(panel_csv, tmp_path_factory, method, covariates,
                                                                 instruments, absorb, weights, cov, cluster, table,
                                                                 small, fixef_k, cluster_df, treatments):
    argv = ["fit", "--csv", str(panel_csv), "--problem", "iv", "--outcome", "y", "--treatment",
            ",".join(["d", "d2"][:treatments]),
            "--instrument", ",".join(["z1", "z2"][:instruments]), "--method", method, "--cov", cov]
    if covariates:
        argv += ["--covariates", ",".join(["x1", "x2"][:covariates])]
    if absorb:
        argv += ["--absorb", absorb]
    if weights:
        argv += ["--weights", "w"]
    if cluster:
        argv += ["--cluster", cluster]
    if small:
        argv += ["--small"]
    if fixef_k:
        argv += ["--fixef-k", fixef_k]
    if cluster_df:
        argv += ["--cluster-df", cluster_df]
    if table:
        argv += ["--table", str(tmp_path_factory.mktemp("table") / "t.md")]
    status, err = _run(argv)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert status in (0, 2), f"{' '.join(argv[1:])}: {err}"
    if status == 2:
        assert len(errors) == 1 and "unexpected" not in errors[0], err
        assert err.strip().splitlines()[-1].startswith("error:"), err
    else:
        assert not errors, err


def test_the_property_test_reaches_fits_and_refusals():
    """The option space above holds both outcomes (so the property is not vacuous): a cluster column without
    the clustered covariance is refused, and a fit with two absorbed columns and no covariates (the crash
    of issue 46) fits."""
    table = _panel()
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/panel.csv"
        table.to_csv(path, index=False)
        base = ["fit", "--csv", path, "--problem", "iv", "--outcome", "y", "--treatment", "d", "--instrument", "z1"]
        assert _run(base + ["--method", "2sls", "--absorb", "unit,year"])[0] == 0
        assert _run(base + ["--method", "liml", "--absorb", "unit,year", "--weights", "w"])[0] == 0
        status, err = _run(base + ["--method", "2sls", "--cluster", "g"])
        assert status == 2 and "clustered" in err
