"""Lee, McCrary, Moreira & Porter's (2022) tF procedure for one instrument and one endogenous column:
the usual t-ratio of 2SLS compared with a critical value that grows as the first-stage F falls, so
that the test keeps its 5 % size whatever the endogeneity.

The critical values are the published 5 % table of Lee et al. (2022, "Valid t-ratio inference for IV",
American Economic Review 112(10)), indexed by the square root of the first-stage F on a grid
from 2.0 to 10.3 in steps of 0.1 (the values below, in that order; as also tabulated in the R package
ivDiag of Lal, Lockhart, Xu & Zu 2024). Between grid points the value is interpolated linearly in √F;
at F of 104.67 and above it is 1.96; at F of 4 and below the table's first value applies, and the
paper's note that no finite critical value exists below F = 3.84 is the caller's to heed
(:func:`tf_interval` returns an unbounded interval there). F must be the first-stage F the t-ratio's
standard error matches: the usual F with homoskedastic errors, the robust (effective) F with robust
ones (Andrews, Stock & Sun 2019 recommend the latter for one instrument).

(Its home is the linear-IV layer, dmlcore/inference/first_stage.py, beside LEE_T_TEST_F; it sits here
until that layer takes it.)
"""

from __future__ import annotations

import numpy as np

from dmlcore.errors import DMLCoreError
from dmlcore.inference.first_stage import LEE_T_TEST_F

SQRT_F_GRID = np.round(np.arange(2.0, 10.3 + 1e-9, 0.1), 1)
CRITICAL_05 = np.array([
    18.66, 9.74, 7.37, 6.18, 5.43, 4.92, 4.54, 4.25, 4.01, 3.82, 3.65, 3.51, 3.39, 3.29, 3.19, 3.11, 3.03,
    2.97, 2.91, 2.85, 2.80, 2.75, 2.71, 2.67, 2.63, 2.60, 2.57, 2.54, 2.51, 2.48, 2.46, 2.43, 2.41, 2.39, 2.37,
    2.35, 2.33, 2.32, 2.30, 2.29, 2.27, 2.26, 2.24, 2.23, 2.22, 2.21, 2.20, 2.19, 2.17, 2.16, 2.16, 2.15, 2.14,
    2.13, 2.12, 2.11, 2.10, 2.10, 2.09, 2.08, 2.08, 2.07, 2.06, 2.06, 2.05, 2.04, 2.04, 2.03, 2.03, 2.02, 2.02,
    2.01, 2.01, 2.00, 2.00, 1.99, 1.99, 1.99, 1.98, 1.98, 1.97, 1.97, 1.97, 1.96])
NO_FINITE_BELOW_F = 3.84      # Lee et al. (2022): below it no finite critical value keeps the size
assert len(SQRT_F_GRID) == len(CRITICAL_05)


def tf_critical_value(f_stat: float) -> float:
    """The 5 % tF critical value for first-stage F ``f_stat`` (module notes); inf below F = 3.84."""
    if not np.isfinite(f_stat) or f_stat < 0:
        raise DMLCoreError(f"The tF critical value needs a first-stage F of 0 or more; got {f_stat!r}. "
                           "Pass the F of the one instrument (the robust F with robust standard errors).")
    if f_stat < NO_FINITE_BELOW_F:
        return float("inf")
    if f_stat >= LEE_T_TEST_F:
        return 1.96
    return float(np.interp(np.sqrt(f_stat), SQRT_F_GRID, CRITICAL_05))


def tf_interval(estimate: float, se: float, f_stat: float) -> dict:
    """The tF 95 % interval: ``estimate ± c(F) · se``, with ``c`` (its critical value) and the factor
    ``c / 1.96`` by which it widens the usual interval; ends ``None`` when c is infinite."""
    c = tf_critical_value(f_stat)
    if not np.isfinite(c):
        return {"critical": c, "factor": c, "lower": None, "upper": None}
    return {"critical": c, "factor": c / 1.96, "lower": estimate - c * se, "upper": estimate + c * se}
