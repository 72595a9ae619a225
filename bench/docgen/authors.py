"""The DML family on the paper's benchmarks (docs/benchmarks.md): one table per study cell, one box
plot per rows file, and the sentences that quote them."""

from __future__ import annotations

from dmlcore.studies.figures import mse_figure

from .registry import block, figure
from .tables import select, study_table

DEEP = ("dml-cmr", "ce-dml-cmr", "naive")

# table id -> (rows file under bench/results/, the cell)
TABLES = {
    "demand-iv-nn-1000": ("authors/demand-iv-nn-1000-2000.csv", {"n": 1000}),
    "demand-iv-nn-2000": ("authors/demand-iv-nn-1000-2000.csv", {"n": 2000}),
    "demand-iv-nn-5000": ("authors/demand-iv-nn-5000.csv", {}),
    "demand-iv-nn-10000": ("authors/demand-iv-nn-10000.csv", {}),
    "demand-iv-nn-5000-strength0.4": ("authors/demand-iv-nn-5000-strength0.4.csv", {}),
    "demand-iv-nn-5000-strength0.01": ("authors/demand-iv-nn-5000-strength0.01.csv", {}),
    **{f"demand-iv-{learner}-{n}": (f"authors/demand-iv-{learner}.csv", {"n": n})
       for learner in ("gb", "rf") for n in (2000, 5000, 10000)},
    "digits-iv-nn-1000": ("authors/digits-iv-nn-1000.csv", {}),
    "digits-iv-nn-5000": ("authors/digits-iv-nn-5000.csv", {}),
    **{f"demand-pcl-nn-{n}": ("authors/demand-pcl-nn.csv", {"n": n}) for n in (1000, 2000, 5000, 10000)},
}


def cell(rows, table_id: str):
    """The fits of a registered table."""
    name, where = TABLES[table_id]
    return select(rows.fits(name), **where)


def _register_table(table_id: str) -> None:
    block(f"table:{table_id}")(lambda rows: study_table(cell(rows, table_id)))


for _id in TABLES:
    _register_table(_id)


@block("table:ihdp-six-methods")
def ihdp_table(rows) -> str:
    return study_table(rows.fits("ihdp-six-methods-bench.csv"), reps_label="replicates")


# box plots: image name -> (rows files, methods or None for all, alt text)
BOXES = {
    "demand-iv-nn-1000-2000.png": (["authors/demand-iv-nn-1000-2000.csv"], None,
                                   "MSE by method, demand-iv, N = 1000 and 2000, {seeds} seeds"),
    "demand-iv-nn-5000.png": (["authors/demand-iv-nn-5000.csv"], None,
                              "MSE by method, demand-iv, N = 5000, {seeds} seeds"),
    "demand-iv-nn-10000.png": (["authors/demand-iv-nn-10000.csv"], None,
                               "MSE by method, demand-iv, N = 10000, {seeds} seeds"),
    "demand-iv-figure2.png": (["authors/demand-iv-nn-1000-2000.csv", "authors/demand-iv-nn-5000.csv",
                               "authors/demand-iv-nn-10000.csv"], DEEP,
                              "MSE by N, DML-CMR, CE-DML-CMR and the naive plug-in, demand-iv, {seeds} seeds"),
    "demand-iv-nn-5000-strength0.4.png": (["authors/demand-iv-nn-5000-strength0.4.csv"], None,
                                          "MSE by method, demand-iv, IV strength 0.4, N = 5000, {seeds} seeds"),
    "demand-iv-nn-5000-strength0.01.png": (["authors/demand-iv-nn-5000-strength0.01.csv"], None,
                                           "MSE by method, demand-iv, IV strength 0.01, N = 5000, {seeds} seeds"),
    "demand-iv-gb.png": (["authors/demand-iv-gb.csv"], None,
                         "MSE by method, demand-iv, gradient boosting, N = 2000, 5000 and 10000, {seeds} seeds"),
    "demand-iv-rf.png": (["authors/demand-iv-rf.csv"], None,
                         "MSE by method, demand-iv, random forests, N = 2000, 5000 and 10000, {seeds} seeds"),
    "digits-iv-nn-1000.png": (["authors/digits-iv-nn-1000.csv"], None,
                              "MSE by method, digits-iv, N = 1000, {seeds} seeds"),
    "digits-iv-nn-5000.png": (["authors/digits-iv-nn-5000.csv"], None,
                              "MSE by method, digits-iv, N = 5000, {seeds} seeds"),
    "demand-pcl-nn.png": (["authors/demand-pcl-nn.csv"], None,
                          "MSE by method, demand-pcl, N = 1000 to 10000, {seeds} seeds"),
    "ihdp-six-methods-bench.png": (["ihdp-six-methods-bench.csv"], None,
                                   "MSE by method, the {seeds} IHDP replicates"),
}


def _register_box(name: str, files: list, methods, alt: str) -> None:
    def fits(rows):
        done = rows.fits(*files)
        return done if methods is None else done[done["method"].isin(methods)]
    figure(name, fits, mse_figure, alt)


for _name, (_files, _methods, _alt) in BOXES.items():
    _register_box(_name, _files, _methods, _alt)
