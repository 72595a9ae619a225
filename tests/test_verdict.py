"""The one verdict rule (dmlcore.studies.verdict): direction and significance from the same test."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import wilcoxon
from statsmodels.stats.multitest import multipletests

from dmlcore.studies.verdict import compare_many, holm, hodges_lehmann, min_pairs, paired_verdict

# Issue 50's counter-example: 16 small positives and 14 large negatives (a blows up... the other way)
COUNTER = np.r_[np.arange(1, 17) * 0.01, -np.linspace(1, 2.3, 14)]


def _rows(diff):
    return [{"dataset": "demand-iv", "n": 100, "method": m, "seed": s, "mse": 5.0 + (x if m == "a" else 0.0),
             "mse_fresh": None, "seconds": 1.0, "status": "done", "reused": False, "key": f"{m}{s}"}
            for s, x in enumerate(diff) for m in ("a", "b")]


def test_the_counter_example_reads_in_the_direction_of_its_test():
    from dmlcore.studies.runner import result_from_rows
    from dmlcore.studies.summarize import verdict_lines

    v = paired_verdict(COUNTER)
    assert np.median(COUNTER) > 0                                   # the old rule's sign said "behind"
    assert wilcoxon(COUNTER, alternative="less").pvalue < 0.05      # the test says a is lower
    assert v.word == "ahead" and v.rank_biserial < 0 and v.hodges_lehmann < 0 and v.ci_upper < 0
    assert v.wins_a == 14 and v.p == pytest.approx(wilcoxon(COUNTER).pvalue)
    result = result_from_rows(_rows(COUNTER))
    row = result.paired.iloc[0]
    assert row["verdict"] == "ahead" and row["hodges_lehmann"] == pytest.approx(v.hodges_lehmann)
    [line] = verdict_lines(result.paired, result.fits)
    assert line.startswith("a is ahead of b (MSE lower on 14 of 30 seeds; Hodges–Lehmann a − b = -0.735 [")


def test_hodges_lehmann_is_the_median_of_walsh_averages_and_its_interval_covers():
    d = np.array([0.3, -1.2, 2.0, 0.7, 1.1, -0.4, 0.9, 1.5])
    walsh = [(d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d))]
    hl, lower, upper = hodges_lehmann(d)
    assert hl == pytest.approx(np.median(walsh)) and lower <= hl <= upper
    # the interval is the set of shifts the exact two-sided signed-rank test does not reject at 0.05
    for shift in np.linspace(-2, 3, 101):
        if np.min(np.abs(np.array(walsh) - shift)) < 1e-9:      # on a Walsh average: a zero or a tie in |d − shift|
            continue
        p = wilcoxon(d - shift, method="exact").pvalue
        assert (lower < shift < upper) == (p >= 0.05), shift
    assert np.isnan(hodges_lehmann(d[:5])[1])       # five pairs: no 95 % interval exists
    rng = np.random.default_rng(1)
    covered = np.mean([(lambda h: h[1] <= 0 <= h[2])(hodges_lehmann(rng.standard_normal(10))) for _ in range(400)])
    assert 0.92 <= covered <= 0.99


def test_holm_matches_statsmodels_and_counts_only_known_p():
    p = np.array([0.01, 0.04, 0.03, 0.2, np.nan, 0.005])
    known = np.isfinite(p)
    assert holm(p)[known] == pytest.approx(multipletests(p[known], method="holm")[1])
    assert np.isnan(holm(p)[4])
    family = compare_many([np.arange(1, 7) * -0.1, np.arange(1, 7) * 0.1, np.zeros(6)])
    assert [v.comparisons for v in family] == [2, 2, 2]
    assert family[0].p_holm == pytest.approx(2 * family[0].p) and family[0].word == "level"   # 0.0625: level
    assert paired_verdict(np.arange(1, 7) * -0.1).word == "ahead"                           # alone: 0.031
    assert min_pairs() == 6 and min_pairs(comparisons=3) == 7


def test_a_study_corrects_its_comparisons_together():
    from dmlcore.studies.report import seeds_warning
    from dmlcore.studies.runner import result_from_rows

    rows = _rows(-np.arange(1, 7) * 0.1)
    rows += [{**r, "method": "c", "key": "c" + r["key"], "mse": 7.0 + r["seed"]} for r in rows if r["method"] == "b"]
    paired = result_from_rows(rows).paired
    assert len(paired) == 3 and set(paired["comparisons"]) == {3}
    assert paired["p_holm"].tolist() == pytest.approx(holm(paired["wilcoxon_p"]).tolist())
    assert (paired["wilcoxon_p"] < 0.05).all() and (paired["verdict"] == "level").all()   # 3 × 0.031 > 0.05
    assert "times 3 comparisons (Holm)" in seeds_warning(paired) and "at least 7 seeds" in seeds_warning(paired)


finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(finite, st.sampled_from([0.0, 1.0, -1.0, 0.5])), min_size=1, max_size=40))
def test_no_verdict_disagrees_with_its_test(diff):
    v = paired_verdict(diff)
    d = np.asarray(diff)
    if v.word == "level":
        assert not (v.p_holm < 0.05) or v.rank_biserial == 0
        return
    side = "less" if v.word == "ahead" else "greater"
    assert wilcoxon(d, alternative=side).pvalue < 0.05           # the one-sided test in the verdict's direction
    assert wilcoxon(d, alternative="greater" if side == "less" else "less").pvalue > 0.5
    assert (v.rank_biserial < 0) == (v.word == "ahead")


@settings(max_examples=100, deadline=None)
@given(st.lists(finite.filter(lambda x: abs(x) > 1e-6), min_size=6, max_size=40, unique_by=lambda x: round(abs(x), 9)))
def test_the_interval_and_estimate_never_contradict_a_verdict(diff):
    v = paired_verdict(diff)        # distinct non-zero |d|: the exact signed-rank distribution holds
    assert v.ci_lower <= v.hodges_lehmann <= v.ci_upper
    if v.word == "ahead":
        assert v.hodges_lehmann < 0
    if v.word == "behind":
        assert v.hodges_lehmann > 0
