"""The one resampler (dmlcore.stats.resample): every split is the one each caller drew before it existed,
bit for bit; cluster-whole folds and draws keep clusters whole; no other module of dmlcore makes folds.

The ``old_*`` functions below are the callers' code as it stood at 6658df7 (before the resampler),
copied by hand: dml.make_folds, heldout_residual.fold_split and its projection, debiased_effect's
representer folds, select.inner_folds, first_stage's subsample and KFold, the bootstrap's draws, and
stats.clusters' cluster_folds / resample_clusters.
"""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import KFold

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.dml import make_folds
from dmlcore.learners.select import inner_folds
from dmlcore.runs.heldout_residual import fold_split
from dmlcore.stats import resample

ROOT = Path(__file__).resolve().parents[1]
CASES = [(50, 2, 0), (103, 5, 7), (1000, 3, 12345)]      # (rows, folds, seed)


def old_cluster_folds(groups, folds, rng):
    labels, code = np.unique(np.asarray(groups), return_inverse=True)
    sizes = np.bincount(code)
    fold_of_cluster, load = np.empty(len(labels), dtype=int), np.zeros(folds)
    for c in rng.permutation(len(labels)):
        k = int(np.argmin(load))
        fold_of_cluster[c], load[k] = k, load[k] + sizes[c]
    return fold_of_cluster[code]


def old_resample_clusters(groups, rng):
    _, code = np.unique(groups, return_inverse=True)
    members = np.split(np.argsort(code, kind="stable"), np.cumsum(np.bincount(code))[:-1])
    return np.concatenate([members[c] for c in rng.integers(0, len(members), size=len(members))])


def old_make_folds(n, folds, seed, groups=None):
    rng = np.random.default_rng([seed, 7])
    if groups is not None:
        fold_of = old_cluster_folds(groups, folds, rng)
        return [np.flatnonzero(fold_of == k) for k in range(folds)]
    perm = rng.permutation(n)
    return [np.sort(part) for part in np.array_split(perm, folds)]


def old_modulo(n, folds, seed, key, groups=None):
    """heldout_residual.fold_split (29), debiased_effect's representer (43), the projection (37)."""
    rng = np.random.default_rng([seed, key])
    return rng.permutation(n) % folds if groups is None else old_cluster_folds(groups, folds, rng)


def old_inner_folds(rows, folds, seed):
    perm = np.random.default_rng([seed, 41]).permutation(rows)
    return [np.sort(part) for part in np.array_split(perm, folds)]


def old_bootstrap(n, seed, index, groups=None):
    rng = np.random.default_rng([seed, 31, index])
    return rng.integers(0, n, size=n) if groups is None else old_resample_clusters(groups, rng)


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def groups_for(n, seed):
    """Clusters of unequal sizes, at least 10 of them, in shuffled row order."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(n) % max(10, n // 9))


@pytest.mark.parametrize("n, k, seed", CASES)
def test_every_purpose_draws_the_split_it_drew_before(n, k, seed):
    groups = groups_for(n, seed)
    assert same(make_folds(n, k, seed), old_make_folds(n, k, seed))
    assert same(make_folds(n, k, seed, groups), old_make_folds(n, k, seed, groups))
    for purpose, key in (("heldout", 29), ("representer", 43), ("projection", 37)):
        assert np.array_equal(resample.fold_labels(n, k, seed, purpose), old_modulo(n, k, seed, key))
        assert np.array_equal(resample.fold_labels(n, k, seed, purpose, groups), old_modulo(n, k, seed, key, groups))
    rows = np.random.default_rng(seed).choice(3 * n, n, replace=False)     # a training set: unsorted rows
    assert same(inner_folds(rows, k, seed), old_inner_folds(rows, k, seed))
    kfold = [(test, train) for train, test in KFold(k, shuffle=True, random_state=seed).split(np.zeros(n))]
    assert all(same(a, b) for a, b in zip(resample.splits(n, k, seed, "first-stage"), kfold))
    assert np.array_equal(resample.subsample(3 * n, n, seed, "first-stage rows"),
                          np.random.default_rng(seed).choice(3 * n, n, replace=False))
    for index in (0, 3):
        assert np.array_equal(resample.draws(n, seed, "bootstrap", index), old_bootstrap(n, seed, index))
        assert np.array_equal(resample.draws(n, seed, "bootstrap", index, groups),
                              old_bootstrap(n, seed, index, groups))


def test_the_held_out_split_of_a_data_set_is_the_old_one_with_and_without_its_cluster_column():
    n = 120
    rng = np.random.default_rng(4)
    table = pd.DataFrame({"y": rng.normal(size=n), "a": rng.normal(size=n), "z": rng.normal(size=n),
                          "g": groups_for(n, 4)})
    data = CausalData(table, "iv", outcome="y", treatment="a", instrument="z")
    for cluster, groups in ((None, None), ("g", table["g"].to_numpy())):
        fold_of = old_modulo(n, 2, 9, 29, groups)
        old = [(np.flatnonzero(fold_of == k), np.flatnonzero(fold_of != k)) for k in range(2)]
        assert all(same(a, b) for a, b in zip(fold_split(data, 2, 9, cluster), old))


@pytest.mark.parametrize("purpose", [p for p, s in resample.STREAMS.items() if s.assign in resample.FOLD_ASSIGN])
def test_cluster_whole_folds_of_every_purpose_keep_each_cluster_in_one_fold(purpose):
    n, k = 400, 5
    groups = groups_for(n, 1)
    fold_of = resample.fold_labels(n, k, 3, purpose, groups)
    per_cluster = pd.Series(fold_of).groupby(groups).nunique()
    assert per_cluster.max() == 1 and set(fold_of) == set(range(k))
    assert pd.Series(resample.fold_labels(n, k, 3, purpose)).groupby(groups).nunique().max() > 1   # rows: split
    held = resample.splits(n, k, 3, purpose, groups)
    assert all(np.array_equal(np.sort(np.r_[h, r]), np.arange(n)) and not np.intersect1d(h, r).size for h, r in held)


def test_cluster_draws_take_whole_clusters_and_as_many_as_the_data_has():
    groups = np.repeat(np.arange(12), np.arange(1, 13))          # cluster c has c + 1 rows
    for index in range(5):
        rows = resample.draws(len(groups), 2, "bootstrap", index, groups)
        counts = pd.Series(groups[rows]).value_counts()
        assert all(count % (label + 1) == 0 for label, count in counts.items())   # whole clusters, maybe repeated
        assert sum(count // (label + 1) for label, count in counts.items()) == 12
    assert not np.array_equal(resample.draws(78, 2, "bootstrap", 0), resample.draws(78, 2, "bootstrap", 1))


def test_streams_are_apart_and_bad_requests_are_refused_by_name():
    keys = [(s.key, s.legacy) for s in resample.STREAMS.values() if s.assign != "rows"]
    assert len(set(keys)) == len(keys)                          # no two split purposes share random numbers
    assert not same(resample.folds(60, 3, 1, "heldout"), resample.folds(60, 3, 1, "representer"))
    with pytest.raises(DMLCoreError, match="No resampling purpose 'crossfitting'"):
        resample.folds(10, 2, 0, "crossfitting")
    with pytest.raises(DMLCoreError, match="'bootstrap' makes draws, not folds"):
        resample.folds(10, 2, 0, "bootstrap")
    with pytest.raises(DMLCoreError, match="seed must be an integer of at least 0; got -1"):
        resample.draws(10, -1, "bootstrap", 0)
    with pytest.raises(DMLCoreError, match="from 2 to as many folds as rows"):
        resample.folds(3, 4, 0, "first-stage")                  # refused as KFold refused it
    with pytest.raises(DMLCoreError, match="5 folds that keep clusters whole need at least 5 clusters"):
        resample.folds(30, 5, 0, "crossfit", np.repeat([0, 1, 2], 10))
    with pytest.raises(DMLCoreError, match="one number per row: 30 rows"):
        resample.folds(30, 2, 0, "crossfit", np.zeros(29))


# Splits a learner or a lesson makes for itself (module notes of dmlcore.stats.resample): not a run's split.
OWN_SPLITS = {
    "dmlcore/estimators/second_stage.py": "the spline and boosted second stage's penalty-validation folds",
    "dmlcore/estimators/sieve.py": "Sieve 2SLS's penalty-validation folds",
    "dmlcore/teaching/pliv.py": "the lesson's cross-fitting written out by hand",
}
# Other random streams that happen to use a resampler key after the seed; none of them makes folds.
OTHER_STREAMS = {
    ("dmlcore/learners/select.py", 43): "the energy score's draws",
    ("dmlcore/estimators/peers/deepgmm.py", 43): "DeepGMM's own randomness",
    ("dmlcore/estimators/peers/kiv.py", 31): "KIV's two-stage sample split (the method's own)",
    ("dmlcore/estimators/peers/kpv.py", 37): "KPV's two-stage sample split (the method's own)",
    ("dmlcore/estimators/peers/dfiv.py", 41): "DFIV's two-stage sample split (the method's own)",
    ("dmlcore/data/designs.py", 41): "a simulator's draws",
    ("dmlcore/teaching/iv.py", 41): "a lesson's draws",
    ("dmlcore/teaching/iv.py", 43): "a lesson's draws",
}
FOLD_IDIOM = re.compile(r"\bKFold\b|\bcluster_folds\(|\bcluster_draw\(|permutation\([^)]*\)\s*%|array_split\(")
SEEDED = re.compile(r"default_rng\(\s*\[\s*[\w.\[\]\"']*seed[\w\]\"']*\s*,\s*(\d+)")


def test_no_other_module_of_dmlcore_makes_folds_or_draws_from_a_resampler_stream():
    keys = {s.key[0] for s in resample.STREAMS.values() if s.key}
    idioms, streams = [], []
    for path in sorted((ROOT / "dmlcore").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name == "dmlcore/stats/resample.py":
            continue
        text = path.read_text()
        if name not in OWN_SPLITS and FOLD_IDIOM.search(text):
            idioms.append(f"{name}: {FOLD_IDIOM.search(text).group(0)}")
        streams += [f"{name}: [seed, {key}]" for key in map(int, SEEDED.findall(text))
                    if key in keys and (name, key) not in OTHER_STREAMS]
    assert idioms == [], "folds made outside dmlcore.stats.resample"
    assert streams == [], "a resampler stream drawn outside dmlcore.stats.resample"


def test_the_idiom_check_finds_a_fold_splitter():
    assert FOLD_IDIOM.search("fold_of = rng.permutation(n) % folds")
    assert FOLD_IDIOM.search("split = KFold(5, shuffle=True)")
    assert not FOLD_IDIOM.search("as scikit-learn's GroupKFold does")
    assert SEEDED.findall('rng = np.random.default_rng([item["seed"], 31, item["index"]])') == ["31"]
    assert SEEDED.findall("np.random.default_rng([self.seed, 7])") == ["7"]
