"""The project's one verdict rule for two methods compared seed by seed (lower is better).

:func:`paired_verdict` is the rule; every page, report, paper table and doc that says "ahead",
"behind" or "level" calls it (directly, or through :func:`compare_many` for a study's family of
comparisons). The rule, stated once (``RULE``):

* The differences ``d = a − b`` over the seeds both methods finished (the same data per seed) are
  tested by the two-sided Wilcoxon signed-rank test (scipy's ``wilcoxon``; zero differences dropped).
* The direction is the test's own: the side of its statistic, ``W+ − W−`` (the rank sums of the
  positive and the negative differences). It is reported as the matched-pairs rank-biserial
  correlation ``r = (W+ − W−) / (W+ + W−)``, the effect size: −1 when a is lower on every seed,
  +1 when b is. The sign of the median difference plays no part (a method that blows up on a few
  seeds can have a positive median difference and still be lower by the test).
* The p-values of the comparisons a study makes are corrected together by Holm's step-down method
  (:func:`holm`); a single comparison, as in the docs, is its own family.
* a is "ahead" of b (b "behind" a) only when the corrected p is below ``ALPHA`` and ``r < 0``;
  "behind" when it is below ``ALPHA`` and ``r > 0``; otherwise the two are "level".
* Beside the verdict every pair carries the Hodges–Lehmann estimate of the difference (the median
  of the Walsh averages ``(d_i + d_j) / 2``, i ≤ j) and its distribution-free ``1 − ALPHA`` interval
  (the Walsh averages cut at the signed-rank distribution's ``ALPHA / 2`` quantile; exact for up to
  ``EXACT_UP_TO`` pairs, the normal approximation beyond; blank below ``min_pairs()`` pairs, where no
  such interval reaches ``1 − ALPHA``). The interval is not Holm-corrected.

Sources: Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods* (3rd ed., 2014), §3.1
(signed-rank test), §3.2 (Hodges–Lehmann estimator and its interval); Kerby (2014), "The simple
difference formula", *Comprehensive Psychology* 3 (rank-biserial correlation); Holm (1979),
*Scandinavian Journal of Statistics* 6, 65–70.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import norm, rankdata, wilcoxon

ALPHA = 0.05
EXACT_UP_TO = 200
RULE = ("A method is ahead of another (the other behind) only when the two-sided Wilcoxon signed-rank test of "
        "their paired differences, Holm-corrected over the comparisons made together, gives p < 0.05; the "
        "direction is the test's own (the sign of the rank-biserial correlation r, from the signed-rank sums), "
        "never the sign of the median difference; otherwise the two are level. Each pair also carries the "
        "Hodges–Lehmann estimate of the difference with its 95 % signed-rank interval.")
WORDS = {"ahead": "is ahead of", "behind": "is behind", "level": "is level with"}


@dataclass(frozen=True)
class PairedVerdict:
    """a against b over their common seeds (``d = a − b``; lower is better): counts, the signed-rank
    test, the effect size and the Hodges–Lehmann interval, and the verdict by :data:`RULE`."""
    pairs: int
    wins_a: int                 # seeds where a is lower
    wins_b: int
    ties: int
    median_diff: float
    hodges_lehmann: float
    ci_lower: float
    ci_upper: float
    rank_biserial: float        # (W+ − W−) / (W+ + W−): below 0 when a is lower by the test
    p: float                    # two-sided signed-rank p (uncorrected)
    p_holm: float               # corrected over the family (equal to p for a family of one)
    comparisons: int = 1        # the family's size

    @property
    def word(self) -> str:
        """"ahead", "behind" or "level": a's relation to b."""
        return verdict(self.p_holm, self.rank_biserial)

    @property
    def a_ahead(self) -> bool:
        return self.word == "ahead"

    @property
    def b_ahead(self) -> bool:
        return self.word == "behind"

    def as_dict(self) -> dict:
        return {"pairs": self.pairs, "wins_a": self.wins_a, "wins_b": self.wins_b, "ties": self.ties,
                "median_diff": self.median_diff, "hodges_lehmann": self.hodges_lehmann, "ci_lower": self.ci_lower,
                "ci_upper": self.ci_upper, "rank_biserial": self.rank_biserial, "wilcoxon_p": self.p,
                "p_holm": self.p_holm, "comparisons": self.comparisons, "verdict": self.word}


def verdict(p: float, rank_biserial: float) -> str:
    """The rule's word from a (corrected) signed-rank p and the test's direction (the rank-biserial
    correlation of a − b, or any number of its sign): "ahead" when p < ALPHA and it is below 0,
    "behind" when p < ALPHA and it is above 0, else "level" (a blank p or direction is level)."""
    if not (p < ALPHA) or not np.isfinite(rank_biserial) or rank_biserial == 0:
        return "level"
    return "ahead" if rank_biserial < 0 else "behind"


def signed_rank_p(diff) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired differences; NaN when none is non-zero."""
    diff = np.asarray(diff, dtype=float)
    if not np.any(diff != 0):
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(wilcoxon(diff).pvalue)


def rank_biserial(diff) -> float:
    """(W+ − W−) / (W+ + W−) over the non-zero differences (mid-ranks of |d| for ties), the statistic
    whose side the signed-rank test decides; NaN when none is non-zero."""
    diff = np.asarray(diff, dtype=float)
    diff = diff[diff != 0]
    if not len(diff):
        return float("nan")
    ranks = rankdata(np.abs(diff))
    return float((ranks[diff > 0].sum() - ranks[diff < 0].sum()) / ranks.sum())


def _lower_tail(n: int) -> np.ndarray:
    """P(W+ ≤ w) for w = 0 … n(n+1)/2 under the null (no ties), by counting subsets of 1 … n."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k].copy()
    return np.cumsum(counts) / 2.0 ** n


def _cut(n: int, alpha: float) -> int:
    """k: the interval runs from the k-th smallest to the k-th largest Walsh average (k ≥ 1), the largest
    k whose coverage 1 − 2 P(W+ ≤ k − 1) is at least 1 − alpha; 0 when none is."""
    if n > EXACT_UP_TO:
        mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        return max(0, int(math.floor(mean - norm.ppf(1 - alpha / 2) * sd)))   # P(W+ ≤ k − 1) ≈ alpha / 2
    tail = _lower_tail(n)
    return int(np.searchsorted(tail, alpha / 2, side="right"))   # count of w with P(W+ ≤ w) ≤ alpha / 2


def hodges_lehmann(diff, alpha: float = ALPHA) -> tuple[float, float, float]:
    """The Hodges–Lehmann estimate of the paired difference and its 1 − alpha signed-rank interval
    (NaN ends with too few pairs for that coverage); NaN throughout for no pairs."""
    diff = np.sort(np.asarray(diff, dtype=float))
    n = len(diff)
    if not n:
        return (float("nan"),) * 3
    i, j = np.triu_indices(n)
    walsh = np.sort((diff[i] + diff[j]) / 2)
    k = _cut(n, alpha)
    lower, upper = (float(walsh[k - 1]), float(walsh[-k])) if k >= 1 else (float("nan"), float("nan"))
    return float(np.median(walsh)), lower, upper


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN stays NaN and is not counted in the family)."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    known = np.flatnonzero(np.isfinite(p))
    m = len(known)
    order = known[np.argsort(p[known], kind="stable")]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        out[index] = running
    return out


def paired_verdict(diff, *, alpha: float = ALPHA) -> PairedVerdict:
    """THE verdict rule (module notes, ``RULE``) for one comparison of a against b, from the paired
    differences ``diff = a − b`` (lower is better; NaN pairs dropped): a family of one, so the
    Holm-corrected p is the p. For a study's comparisons, correct them together with :func:`compare_many`."""
    diff = np.asarray(diff, dtype=float)
    diff = diff[np.isfinite(diff)]
    p = signed_rank_p(diff)
    hl, lower, upper = hodges_lehmann(diff, alpha)
    return PairedVerdict(pairs=len(diff), wins_a=int((diff < 0).sum()), wins_b=int((diff > 0).sum()),
                         ties=int((diff == 0).sum()), median_diff=float(np.median(diff)) if len(diff) else np.nan,
                         hodges_lehmann=hl, ci_lower=lower, ci_upper=upper, rank_biserial=rank_biserial(diff),
                         p=p, p_holm=p, comparisons=1)


def compare_many(diffs, *, alpha: float = ALPHA) -> list[PairedVerdict]:
    """:func:`paired_verdict` for each of a family's differences, with Holm's correction over the family
    (the comparisons with a p)."""
    single = [paired_verdict(d, alpha=alpha) for d in diffs]
    adjusted = holm([v.p for v in single])
    m = int(np.isfinite([v.p for v in single]).sum()) if single else 0
    return [replace(v, p_holm=float(a), comparisons=m) for v, a in zip(single, adjusted)]


def smallest_p(pairs: int) -> float:
    """The smallest two-sided signed-rank p that ``pairs`` paired seeds can give (every difference of
    one sign, no ties): 2 / 2^pairs."""
    return 2.0 * 0.5 ** pairs if pairs > 0 else 1.0


def min_pairs(alpha: float = ALPHA, comparisons: int = 1) -> int:
    """The fewest paired seeds whose smallest possible p, times the family's size (Holm's first step),
    is below ``alpha`` (6 for one comparison at 0.05)."""
    pairs = 1
    while smallest_p(pairs) * max(comparisons, 1) >= alpha:
        pairs += 1
    return pairs


def interval_text(v: PairedVerdict, digits: int = 3) -> str:
    """"HL a − b = −0.12 [−0.3, −0.01]" (the interval blank with too few pairs)."""
    def g(x):
        return f"{x:.{digits}g}"
    ci = f" [{g(v.ci_lower)}, {g(v.ci_upper)}]" if np.isfinite(v.ci_lower) else ""
    return f"Hodges–Lehmann a − b = {g(v.hodges_lehmann)}{ci}" if np.isfinite(v.hodges_lehmann) else ""
