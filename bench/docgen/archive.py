"""Rows in bench/results/ that no generated block reads, each with the reason it is kept.

``python bench/docs.py --check`` fails on a rows file that no block, figure or derived file reads and
that no entry below (a glob relative to bench/results/; ``*`` crosses folders) explains: a result that
no doc shows is either wired into a block or listed here with its reason, never left lying beside the
rows that are shown. An entry that matches no file fails the check too.
"""

from __future__ import annotations

from dmlcore.teaching.measured import FILES as LEARN_MEASURED

# Read by code outside the docs (the dashboard or the library at run time).
READ_BY: dict[str, str] = {
    **{name: "dmlcore.teaching.measured (the Learn page's table of the project's benchmarks)" for name in LEARN_MEASURED},
    "teaching/crossfit-swap.csv": "dmlcore.teaching.nuisance.SWAP_CSV (Learn -> Cross-fitting)",
    "teaching/demand-band-coverage.csv": "dmlcore.teaching.demand.BAND_COVERAGE_CSV (Learn -> Demand)",
    "teaching/measured.csv": "derived by bench/docs.py --write for the Learn page (checked as a derived file)",
    "teaching/run.json": "dmlcore.teaching.nuisance.saved_run (Learn -> Orthogonal score, Cross-fitting: how long "
                         "the saved runs took); also the date, machine and load of every teaching experiment",
}

# Kept for the record, not shown: raw logs, a study runner's side output, runs a later run superseded.
ARCHIVED: dict[str, str] = {
    "sieve-dimension-2026-11-29/*": "the sieve effect's rows on the additive ladder (issue 44), superseded by "
                                    "sieve-dimension-2026-11-29-1115 (treatment x proxy rungs added), which carries "
                                    "its IV rows over unchanged (its compare.json: recomputed, identical)",
    "sieve-flag/summary.csv": "bench/sieve_flag.py's one line per (gap bar, se-ratio bar) against issue 44's targets: "
                              "the search behind the calibrated bar; the blocks sieve-flag:* read the chosen rule's rows",
    "*.log": "a run's console log (progress, /usr/bin/time) beside the rows it wrote; blocks read the rows "
             "(and, where a doc quotes memory or wall time, the log itself)",
    "authors/regression-rho/*": "the study runner's whole output (spec, fits, tables, plot); the block "
                                "regression-rho reads its summary.csv",
    "figure2-idle/*": "the study runner's whole output; the blocks read fits.csv and recompute the summary and "
                      "paired tables with one significance standard",
    "study40-*-paired.csv": "the study runner's paired table; docs/studies.md's blocks recompute it from the fits",
    "study40-*-summary.csv": "the study runner's summary; docs/studies.md's blocks recompute it from the fits",
    "effect-coverage-small.csv": "the 10-seed first look at effect coverage, superseded by effect-coverage.csv "
                                 "(docs/coverage.md names it)",
    "heldout-ranking-small.csv": "the first, smaller held-out ranking run, superseded by heldout-ranking.csv",
    "results-draw-cost-2026-11-29-first-check.json": "the first before/after check of the Results page's browser CPU "
                                                      "(issue 47); its rounds all started at the same tree, which "
                                                      "measured higher; superseded by results-draw-cost-2026-11-29-check.json",
    "results-draw-cost-2026-11-29-variants*-check.json": "experiments that left one part of the Results page out (the "
                                                         "loss charts, the data grids, the curves, the Linear IV drawing, "
                                                         "the bootstrap form) to see what costs the browser; not changes",
    "ihdp-six-methods.csv": "the six-method IHDP rows with seed = replicate; ihdp-six-methods-bench.csv holds the "
                            "same rows in the bench format the blocks read",
    "executor-overhead-no-psutil.jsonl": "the executor overhead before psutil was installed (docs/studies.md links "
                                         "it as the history of the with-psutil numbers)",
    "peers-dfiv-norm-demand-iv.csv": "DFIV's normalisation trial, superseded by peers-dfiv-validation-*.csv",
    "peers-study-*.csv": "the peers' first study rows, superseded by authors/peers-*.csv (docs/peers.md)",
    "teaching/*-rows.csv": "one row per simulated data set behind a teaching summary (compare-*.csv, wald.csv) "
                           "that docs/teaching.md's blocks read; `python -m bench.teaching` saves both",
    "teaching/demand-bands.csv": "the band on one data set per strength; docs/teaching.md quotes the 10-data-set "
                                 "coverage (demand-band-coverage.csv) instead",
    "teaching/weak-1-instrument.csv": "the Weak IV tab's one-instrument setting, saved beside the four-instrument "
                                      "rows that docs/teaching.md shows (block teaching:weak-4); not quoted",
    "perf/pilot-one-fold.jsonl": "issue 45's speed cut measured and not made (bench/pilot_one_fold.py): auto's "
                                 "pilot on one fold would change a choice on a few seeds and raised the MSE where it "
                                 "did; the helper's report quotes it, no doc does",
    "perf/speed-54/*": "a loaded machine's CPU seconds of the default command before and after the speed branch "
                       "(same records) and one breakdown by part: kept until an idle default-fit row shows both",
    "perf/refit-arrangements.jsonl": "issue 45: where the default fit's two refits run (2 workers niced or not, 1 "
                                     "worker, in process, forkserver), paired: on a loaded machine (about 1 of 2 "
                                     "cores: CPU seconds only) and, from 14:37 on 2026-11-29, on the 2 cores with "
                                     "nothing else seen running (3 rounds); the helper's report quotes them, the "
                                     "lead's idle default-fit row is what docs/benchmarks.md shows",
}
