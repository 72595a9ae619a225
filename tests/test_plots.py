"""dmlcore.plots: the figures the dashboard draws, checked without Streamlit."""

import numpy as np
import pandas as pd

from dmlcore import plots
from dmlcore.estimators.dml import make_folds


def _curve(offset=0.0, groups=("type 1", "type 2")):
    frames = []
    for g in groups:
        x = np.linspace(10, 25, 5)
        frames.append(pd.DataFrame({"x": x, "estimate": -2 * x + offset, "truth": -2 * x, "group": g}))
    return pd.concat(frames, ignore_index=True)


def test_curve_figure_one_panel_per_group_and_one_truth_legend():
    fig = plots.curve_figure([("DML-CMR", _curve(1.0)), ("2SLS", _curve(500.0))], methods=["dml-cmr", "2sls"])
    names = [t.name for t in fig.data]
    assert names.count("truth") == 2 and names.count("DML-CMR") == 2
    assert sum(t.showlegend is not False for t in fig.data if t.name == "truth") == 1
    truth = next(t for t in fig.data if t.name == "truth")
    assert truth.line.dash == "dash" and truth.line.color == plots.TRUTH_COLOR
    # the far-off 2SLS curve does not set the y range: it stays near the truth
    low, high = fig.layout.yaxis.range
    assert high < 100 and low > -100


def test_curve_figure_without_truth_has_no_truth_trace():
    frame = _curve().assign(truth=np.nan)
    fig = plots.curve_figure([("run", frame)])
    assert "truth" not in [t.name for t in fig.data]


def test_loss_figure_from_a_record_and_thinning():
    hist = {"epoch": list(range(500)), "train": list(np.linspace(1, 0.1, 500)), "val": [None] * 500}
    record = [{"fold": 0, "s": hist, "g": hist, "second_stage_loss": 0.1},
              {"fold": 1, "s": hist, "second_stage_loss": 0.2}]
    losses = plots.losses_from_record(record)
    assert set(losses) == {"s", "g"} and set(losses["s"]) == {0, 1}
    fig = plots.loss_figure(losses, max_points=50)
    assert len(fig.data) == 3                       # no validation traces: all None
    assert all(len(t.x) <= 51 and t.x[-1] == 499 for t in fig.data)
    wide = {"f": {None: {"epoch": [0, 1, 2], "train": [10_000.0, 100.0, 10.0], "val": [None] * 3}}}
    assert plots.loss_figure(wide).layout.yaxis.type == "log"
    empty = plots.loss_figure({})
    assert "No losses" in empty.layout.title.text


def test_folds_figure_marks_each_row_held_out_once():
    folds = make_folds(50, 5, 0)
    fig = plots.folds_figure(folds, 50)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (5, 50)
    assert ((z == 2).sum(axis=0) == 1).all()         # every row held out by exactly one fold


def test_column_and_bar_figures():
    table = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0) ** 2})
    assert plots.column_figure(table, "a").data[0].type == "histogram"
    assert plots.column_figure(table, "a", "b", color="b").data[0].type == "scattergl"
    bars = plots.bar_figure(["OLS", "2SLS"], [0.5, 0.3], keys=["ols", "2sls"])
    assert list(bars.data[0].marker.color) == [plots.METHOD_COLORS["ols"], plots.METHOD_COLORS["2sls"]]


def test_two_runs_of_one_method_get_different_colours():
    fig = plots.curve_figure([("#1 DML-CMR", _curve(1.0)), ("#2 DML-CMR", _curve(2.0))],
                             methods=["dml-cmr", "dml-cmr"])
    colors = {t.name: t.line.color for t in fig.data if t.name != "truth"}
    assert colors["#1 DML-CMR"] == plots.METHOD_COLORS["dml-cmr"] != colors["#2 DML-CMR"]


def _banded(curve, half_width, kind="95 % confidence band (sandwich)"):
    return curve.assign(lower=curve["estimate"] - half_width, upper=curve["estimate"] + half_width, band=kind)


def test_curve_figure_shades_a_band_under_its_line_iff_the_frame_has_one():
    plain = plots.curve_figure([("DML-CMR", _curve(1.0))], methods=["dml-cmr"])
    assert not [t for t in plain.data if t.fill]
    fig = plots.curve_figure([("DML-CMR", _banded(_curve(1.0), 2.0)), ("2SLS", _curve(3.0))],
                             methods=["dml-cmr", "2sls"])
    bands = [t for t in fig.data if t.fill]
    assert len(bands) == 2 and {t.fill for t in bands} == {"toself"}           # one per panel
    assert [t.name for t in bands] == ["DML-CMR: 95 % confidence band (sandwich)"] * 2
    assert [t.showlegend for t in bands] == [True, False]
    assert bands[0].fillcolor == "rgba(31, 119, 180, 0.2)"                      # the DML-CMR blue
    assert bands[0].legendgroup == "DML-CMR" and "customdata[0]" in bands[0].hovertemplate
    names = [t.name for t in fig.data]
    assert names.index(bands[0].name) < names.index("DML-CMR")                 # drawn under the line
    x = np.linspace(10, 25, 5)
    np.testing.assert_allclose(bands[0].x, np.concatenate([x, x[::-1]]))
    np.testing.assert_allclose(bands[0].y, np.concatenate([-2 * x + 3, (-2 * x - 1)[::-1]]))
    nan_band = _curve(1.0).assign(lower=np.nan, upper=np.nan, band="none")
    assert not [t for t in plots.curve_figure([("run", nan_band)]).data if t.fill]


def test_y_range_takes_in_moderate_bands_but_not_wide_ones():
    truth_span = 30.0                                   # truth: -2x over x in [10, 25]
    moderate = plots.curve_figure([("run", _banded(_curve(), 5.0, "range of 3 cross-fits"))])
    low, high = moderate.layout.yaxis.range
    assert low < -50 - 5 and high > -20 + 5            # the band's edges are in view
    wide = plots.curve_figure([("run", _banded(_curve(), 1000.0))])
    low, high = wide.layout.yaxis.range
    assert low > -50 - 1.2 * truth_span and high < -20 + 1.2 * truth_span
    no_truth = plots.curve_figure([("run", _banded(_curve().assign(truth=np.nan), 1000.0))])
    low, high = no_truth.layout.yaxis.range
    assert low > -50 - 1.2 * truth_span and high < -20 + 1.2 * truth_span


def test_sweep_figure_one_panel_per_quantity_with_reference_lines():
    fig = plots.sweep_figure([2.0, 1.0, 0.5], [("width", [1.0, 2.0, 3.0], None), ("coverage", [0.9, 0.8, 0.7], 0.95)],
                             x_title="instrument strength", log_x=True, text=["F 100", "F 20", "F 5"])
    assert [t.name for t in fig.data] == ["width", "coverage"]
    assert list(fig.data[1].y) == [0.9, 0.8, 0.7] and list(fig.data[0].text) == ["F 100", "F 20", "F 5"]
    assert fig.layout.xaxis.type == "log" and [s.y0 for s in fig.layout.shapes] == [0.95]


def test_a_loss_history_of_one_point_is_drawn_as_a_marker():
    fig = plots.loss_figure({"s": {0: {"epoch": [0], "train": [0.9], "val": [0.95]}},
                             "g": {0: {"epoch": [0, 1], "train": [0.5, 0.4], "val": [None, None]}}})
    assert [t.mode for t in fig.data if t.xaxis == "x"] == ["markers", "markers"]   # train and validation
    assert [t.mode for t in fig.data if t.xaxis == "x2"] == ["lines"]


def test_curve_figure_legend_below_leaves_the_curves_the_full_width():
    """Long run names go in a legend under the panels (its entries in rows), never beside them: the
    x axes span the figure's whole plotting width, one panel or several."""
    long = "#12 DML-CMR · gb · a data set with a long name n=2000 seed 0: 95 % confidence band"
    for groups in (("all",), tuple(f"type {i}" for i in range(7))):
        fig = plots.curve_figure([(long, _curve(1.0, groups)), (long + " 2", _curve(2.0, groups))])
        legend = fig.layout.legend
        assert legend.orientation == "h" and legend.yanchor == "top" and legend.y < 0
        ends = [axis["domain"] for name, axis in fig.layout.to_plotly_json().items() if name.startswith("xaxis")]
        assert min(d[0] for d in ends) == 0 and max(d[1] for d in ends) == 1
