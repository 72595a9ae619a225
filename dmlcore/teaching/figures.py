"""Plotly figures of the teaching experiments (no Streamlit): each takes an Experiment."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dmlcore.inference.first_stage import LEE_T_TEST_F, STOCK_YOGO_SIZE_10, WEAK_F
from dmlcore.estimators import METHOD_TITLES
from dmlcore.estimators._registry import PAPER_METHOD, PLUG_IN_METHOD
from dmlcore.plots import PALETTE, TRUTH_COLOR, color_for
from dmlcore.teaching.classroom import log_bins
from dmlcore.teaching.forbidden import f0
from dmlcore.teaching.pliv import SCORE_TITLES
from dmlcore.teaching.result import Experiment

LAYOUT = dict(template="plotly_white", margin=dict(l=55, r=20, t=60, b=50),
              legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0))
COLORS = {"OLS": color_for("ols"), "2SLS": color_for("2sls"), "Wald": color_for("2sls"),
          "Y on A": color_for("ols"), "Y on A and W": PALETTE[3], "proximal 2SLS": color_for("2sls"),
          "proximal 2SLS, Z dropped (noise)": PALETTE[7], "treated minus untreated": color_for("ols"),
          "regression": color_for("ols"), "forbidden": color_for("naive"), "two-stage": color_for("dml-cmr")}


def _truth_line(fig, y, name="truth", **where):
    fig.add_hline(y=y, line=dict(color=TRUTH_COLOR, dash="dash", width=2), annotation_text=name,
                  annotation_position="top left", **where)


def _clip_range(values, truth, spread: float = 4.0):
    """A y range around the middle of ``values`` that keeps ``truth`` in view and lets the tails of
    very wide distributions (weak instruments) leave the plot instead of flattening it."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    q1, q3 = np.percentile(v, [10, 90])
    pad = spread * max(q3 - q1, 1e-6) / 2
    lo, hi = min(q1 - pad, truth), max(q3 + pad, truth)
    margin = 0.05 * (hi - lo)
    return [lo - margin, hi + margin]


def estimates_box(exp: Experiment, setting: str, *, x_title: str, y_title: str = "estimated effect of price",
                  title: str | None = None, fmt: str = "{:g}") -> go.Figure:
    """Box plots of each estimator's estimates over the draws, one group per value of ``setting``,
    with the truth dashed."""
    table = exp.draws
    fig = go.Figure()
    for i, (name, part) in enumerate(table.groupby("estimator", sort=False)):
        fig.add_trace(go.Box(x=part[setting].map(fmt.format) if setting else None, y=part["estimate"], name=name,
                             marker_color=COLORS.get(name, PALETTE[i % len(PALETTE)]), boxpoints=False))
    if exp.truth is not None:
        _truth_line(fig, exp.truth, "truth")
    fig.update_layout(**LAYOUT, boxmode="group", title=title, height=400,
                      xaxis_title=x_title, yaxis_title=y_title)
    if exp.truth is not None:
        fig.update_yaxes(range=_clip_range(table["estimate"], exp.truth))
    return fig


def wald_scatter(exp: Experiment) -> go.Figure:
    """The data of :func:`dmlcore.teaching.iv.wald`: price against sales by instrument group, the
    two group means, the Wald line through them, the OLS line and the true line."""
    rows, means = exp.draws, exp.params["means"]
    fig = go.Figure()
    for group, color in (("off", "#9ecae1"), ("on", "#fdae6b")):
        part = rows[rows["instrument"] == group]
        fig.add_trace(go.Scatter(x=part["price"], y=part["sales"], mode="markers", name=f"instrument {group}",
                                 marker=dict(color=color, size=6, opacity=0.7)))
    fig.add_trace(go.Scatter(x=[means["off"][0], means["on"][0]], y=[means["off"][1], means["on"][1]],
                             mode="markers", name="group means", marker=dict(color="#222", size=14, symbol="x")))
    slopes = exp.summary.set_index("estimate")["slope"]
    xs = np.quantile(rows["price"], [0.02, 0.98])
    cx, cy = rows["price"].mean(), rows["sales"].mean()
    wx = np.array([means["off"][0], means["on"][0]])
    ext = np.array([xs[0], xs[1]])
    fig.add_trace(go.Scatter(x=ext, y=means["off"][1] + slopes["Wald ratio"] * (ext - wx[0]), mode="lines",
                             name=f"Wald line, slope {slopes['Wald ratio']:.2f}",
                             line=dict(color=COLORS["Wald"], width=3)))
    fig.add_trace(go.Scatter(x=ext, y=cy + slopes["OLS"] * (ext - cx), mode="lines",
                             name=f"OLS line, slope {slopes['OLS']:.2f}", line=dict(color=COLORS["OLS"], width=3)))
    fig.add_trace(go.Scatter(x=ext, y=slopes["truth"] * ext, mode="lines",
                             name=f"true effect, slope {slopes['truth']:.2f}",
                             line=dict(color=TRUTH_COLOR, width=2, dash="dash")))
    fig.update_layout(**LAYOUT, height=430, xaxis_title="price", yaxis_title="sales",
                      title="Each dot a market; colour: the instrument's value")
    return fig


def weak_figure(exp: Experiment) -> go.Figure:
    """Left: 2SLS and OLS estimates over the draws at each instrument strength (by median F), the
    truth dashed. Right: how often the usual 2SLS interval and the Anderson-Rubin set cover the
    truth, with the nominal level and the F thresholds."""
    table, summary = exp.draws, exp.summary
    labels = {row["expected F"]: f"F≈{row['median F']:.3g}" for _, row in summary.iterrows()}
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.1,
                        subplot_titles=("Estimates over the draws", "Intervals that contain the truth"))
    for name in ("2SLS", "OLS"):
        fig.add_trace(go.Box(x=table["expected F"].map(labels), y=table[name], name=name, boxpoints=False,
                             marker_color=COLORS[name], legendgroup=name), row=1, col=1)
    fig.add_hline(y=exp.truth, line=dict(color=TRUTH_COLOR, dash="dash", width=2), row=1, col=1,
                  annotation_text="truth", annotation_position="bottom right")
    fig.update_yaxes(range=_clip_range(np.concatenate([table["2SLS"], table["OLS"]]), exp.truth, 1.5),
                     title_text="estimated effect of price", row=1, col=1)
    level = exp.params["level"]
    for name, column, color in (("usual 2SLS interval", "2SLS interval coverage", COLORS["2SLS"]),
                                ("Anderson-Rubin set", "AR coverage", PALETTE[3])):
        fig.add_trace(go.Scatter(x=summary["median F"], y=summary[column], mode="lines+markers", name=name,
                                 line=dict(color=color, width=2)), row=1, col=2)
    fig.add_hline(y=level, line=dict(color=TRUTH_COLOR, dash="dash"), row=1, col=2,
                  annotation_text=f"nominal {level:.0%}", annotation_position="bottom right")
    sy = STOCK_YOGO_SIZE_10.get(int(exp.params.get("instruments", 1)))
    low = float(min(summary[["2SLS interval coverage", "AR coverage"]].min().min(), level)) - 0.05
    one = int(exp.params.get("instruments", 1)) == 1
    bars = (WEAK_F, sy, LEE_T_TEST_F) if one else (WEAK_F, sy)   # Lee et al.'s 104.7 is for one instrument
    for value in bars:
        if value is not None:  # as traces: shapes on a log axis are placed inconsistently
            fig.add_trace(go.Scatter(x=[value, value], y=[low, 1.0], mode="lines+text", text=["", f"{value:g}"],
                                     textposition="top center", line=dict(color="#999", dash="dot", width=1),
                                     showlegend=False, hoverinfo="skip"), row=1, col=2)
    fig.update_xaxes(type="log", title_text="median first-stage F (dotted: 10, Stock-Yogo"
                     + (", Lee et al.)" if one else ")"), row=1, col=2)
    fig.update_yaxes(title_text="share of draws", row=1, col=2)
    fig.update_xaxes(title_text="instrument strength (median first-stage F)", row=1, col=1)
    fig.update_layout(**LAYOUT, boxmode="group", height=460)
    fig.update_layout(margin=dict(t=90), legend=dict(y=1.1))
    return fig


def intervals_figure(exp: Experiment, expected_f: float, count: int = 12) -> go.Figure:
    """The usual 2SLS interval and the Anderson-Rubin set of the first ``count`` draws at one
    strength, side by side. Where a set runs past the plot, its edge says how: a triangle when it
    goes on to infinity, the number where it ends when it is bounded; a half-line that starts
    beyond the plot is written at the edge; an empty set is written as such."""
    part = exp.draws[np.isclose(exp.draws["expected F"], expected_f)].head(count)
    lo_all = np.concatenate([part["2SLS lower"], part["AR lower"]])
    hi_all = np.concatenate([part["2SLS upper"], part["AR upper"]])
    finite = np.concatenate([lo_all[np.isfinite(lo_all)], hi_all[np.isfinite(hi_all)], [exp.truth]])
    left, right = np.percentile(finite, [5, 95])
    left, right = min(left, exp.truth - 1), max(right, exp.truth + 1)
    fig = go.Figure()
    shown = set()
    marks, notes = [], []        # (x, y, symbol, colour) and (x, y, text, text position)
    for i, (_, row) in enumerate(part.iterrows()):
        y = i + 1
        for name, shape, lo, hi, offset, color in (
                ("usual 2SLS interval", "interval", row["2SLS lower"], row["2SLS upper"], 0.15, COLORS["2SLS"]),
                ("Anderson-Rubin set", row["AR shape"], row["AR lower"], row["AR upper"], -0.15, PALETTE[3])):
            if shape == "empty":
                notes.append((left, y + offset, "  AR set empty", "middle right"))
                continue
            for a, b in _set_pieces(shape, lo, hi):
                if b < left or a > right:     # a half-line that starts beyond the plot
                    at_right = a > right
                    notes.append((right, y + offset, f"[{a:.3g}, ∞) ", "middle left") if at_right else
                                 (left, y + offset, f" (−∞, {b:.3g}]", "middle right"))
                    continue
                fig.add_trace(go.Scatter(x=[max(a, left), min(b, right)], y=[y + offset] * 2, mode="lines",
                                         name=name, line=dict(color=color, width=5), legendgroup=name,
                                         showlegend=name not in shown, hoverinfo="skip"))
                shown.add(name)
                for end, edge, outward, where in ((a, left, "triangle-left", "middle right"),
                                                  (b, right, "triangle-right", "middle left")):
                    if np.isinf(end):
                        marks.append((edge, y + offset, outward, color))
                    elif (end < left) if edge == left else (end > right):
                        notes.append((edge, y + offset + 0.32, f"{end:.3g}".replace("-", "−"), where))
    if marks:
        x, y, symbol, color = zip(*marks)
        fig.add_trace(go.Scatter(x=x, y=y, mode="markers", name="goes on to infinity", hoverinfo="skip",
                                 marker=dict(symbol=list(symbol), size=13, color=list(color))))
    if notes:
        x, y, text, position = zip(*notes)
        fig.add_trace(go.Scatter(x=x, y=y, mode="text", text=list(text), textposition=list(position),
                                 textfont=dict(size=11, color="#444"), showlegend=False, hoverinfo="skip"))
    fig.add_vline(x=exp.truth, line=dict(color=TRUTH_COLOR, dash="dash", width=2), annotation_text="truth")
    fig.update_layout(**LAYOUT, height=90 + 32 * len(part), xaxis=dict(range=[left, right], title="effect of price"),
                      yaxis=dict(title="draw", autorange="reversed", dtick=1),
                      title="95 % intervals of single data sets. At an edge: ◀ ▶ the set goes on to infinity; "
                            "a number, where a set that runs past the plot ends")
    fig.update_layout(title_font_size=14)
    return fig


def _set_pieces(shape, lo, hi) -> list[tuple[float, float]]:
    """The pieces of a confidence set of ``shape`` as (start, end), with infinite ends."""
    if shape == "interval":
        return [(lo, hi)]
    if shape == "whole line":
        return [(-np.inf, np.inf)]
    if shape == "two half-lines":
        return [(-np.inf, lo), (hi, np.inf)]
    return []


def forbidden_figure(exp: Experiment) -> go.Figure:
    """The median curve of each fit over the draws, the truth dashed, and (dotted) the flattened
    curve exp(-sigma^2 / 2) f0 that the forbidden regression converges to."""
    curves = exp.params["curves"]
    titles = {"regression": "regression of Y on f's basis (confounded)",
              "forbidden": "forbidden: f fitted to E-hat[A | Z]", "two-stage": "two-stage: Y on E-hat[f(A) | Z]"}
    fig = go.Figure()
    for method, part in curves.groupby("method", sort=False):
        fig.add_trace(go.Scatter(x=part["a"], y=part["median estimate"], mode="lines", name=titles[method],
                                 line=dict(color=COLORS[method], width=3)))
    grid = curves["a"].unique()
    fig.add_trace(go.Scatter(x=grid, y=exp.params["flattening"] * f0(grid), mode="lines",
                             name=f"{exp.params['flattening']:.2f} × truth (where the forbidden fit goes)",
                             line=dict(color=COLORS["forbidden"], dash="dot", width=2)))
    fig.add_trace(go.Scatter(x=grid, y=f0(grid), mode="lines", name="truth f(a) = 2 sin(a)",
                             line=dict(color=TRUTH_COLOR, dash="dash", width=2.5)))
    fig.update_layout(**LAYOUT, height=430, xaxis_title="price a", yaxis_title="f(a): expected sales at price a",
                      title=f"Median curve over {exp.params['draws']} simulated data sets")
    fig.update_layout(legend=dict(orientation="v", y=1.0, yanchor="top", x=1.01, xanchor="left"))
    return fig


def methods_box(exp: Experiment) -> go.Figure:
    """The MSE of f-hat of each method over the simulated data sets (log scale)."""
    fig = go.Figure()
    for method, part in exp.draws.groupby("method", sort=False):
        fig.add_trace(go.Box(y=part["mse"], name=METHOD_TITLES[method], marker_color=color_for(method),
                             boxpoints="all", jitter=0.4, pointpos=0))
    fig.update_layout(**LAYOUT, height=400, showlegend=False,
                      yaxis=dict(type="log", title="MSE of f-hat (log scale)", tickformat=".2~g"),
                      title=f"{exp.params['draws']} simulated data sets, the same for every method")
    return fig


def orthogonality_figure(exp: Experiment) -> go.Figure:
    """Against the size eps of a known nuisance error, one column per kind of error, one line per
    method (averaged over seeds): top, the error of f-hat against the true f; bottom, how far
    f-hat moved from its fit with the nuisances as estimated (a straight line through 0: first
    order; a curve flat at 0: second order)."""
    kinds = list(exp.params["perturbations"])
    fig = make_subplots(rows=2, cols=len(kinds), shared_yaxes=True, shared_xaxes=True, horizontal_spacing=0.05,
                        vertical_spacing=0.1, subplot_titles=[exp.params["perturbations"][k] for k in kinds])
    for ci, kind in enumerate(kinds, start=1):
        part = exp.summary[exp.summary["perturbation"] == kind]
        for method, lines in part.groupby("method", sort=False):
            for ri, column in ((1, "rmse"), (2, "change")):
                fig.add_trace(go.Scatter(x=lines["eps"], y=lines[column], mode="lines+markers",
                                         name=METHOD_TITLES[method], line=dict(color=color_for(method), width=2.5),
                                         legendgroup=method, showlegend=ci == 1 and ri == 1), row=ri, col=ci)
        fig.update_xaxes(title_text="eps", row=2, col=ci)
    fig.update_yaxes(title_text="RMSE of f-hat vs the true f", row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title_text="how far f-hat moved", row=2, col=1, rangemode="tozero")
    fig.update_layout(**LAYOUT, height=620)
    fig.update_layout(margin=dict(t=100), legend=dict(y=1.08))
    fig.update_annotations(font_size=12)
    return fig


def pliv_histograms(exp: Experiment) -> go.Figure:
    """Histograms of (theta-hat - theta) / se of :func:`dmlcore.teaching.pliv.simulations`: one
    panel per score (columns) and with / without cross-fitting (rows), the N(0, 1) density over
    each, the panel's coverage of the 95 % interval in its title."""
    table, summary = exp.draws, exp.summary.set_index(["score", "cross-fitting"])
    cells = [(crossfit, score) for crossfit in (True, False) for score in SCORE_TITLES]
    # two short lines per panel title, so that neighbouring titles never meet at 1,024 pixels
    titles = [f"{SCORE_TITLES[s]}, {'cross-fitting' if c else 'no cross-fitting'}<br>"
              f"covers {100 * summary.loc[(s, c), 'coverage']:.1f} %" for c, s in cells]
    fig = make_subplots(rows=2, cols=2, shared_xaxes=True, shared_yaxes=True, subplot_titles=titles,
                        horizontal_spacing=0.06, vertical_spacing=0.12)
    grid = np.linspace(-6, 6, 241)
    bins = dict(start=-6, end=6, size=0.25)
    for i, (crossfit, score) in enumerate(cells):
        row, col = i // 2 + 1, i % 2 + 1
        t = table.loc[(table["score"] == score) & (table["cross-fitting"] == crossfit), "t"].clip(-6, 6)
        fig.add_trace(go.Histogram(x=t, xbins=bins, histnorm="probability density", name=SCORE_TITLES[score],
                                   marker_color=color_for(PLUG_IN_METHOD if score == "naive" else PAPER_METHOD), opacity=0.75,
                                   legendgroup=score, showlegend=row == 1), row=row, col=col)
        fig.add_trace(go.Scatter(x=grid, y=np.exp(-grid ** 2 / 2) / np.sqrt(2 * np.pi), mode="lines",
                                 name="N(0, 1)", line=dict(color=TRUTH_COLOR, dash="dash", width=2),
                                 legendgroup="normal", showlegend=i == 0), row=row, col=col)
    fig.update_xaxes(title_text="(θ̂ − θ) / se  (values beyond ±6 piled at the edge)", row=2)
    fig.update_yaxes(title_text="density", col=1)
    fig.update_layout(**LAYOUT, height=560, bargap=0.02)
    fig.update_layout(margin=dict(t=110), legend=dict(y=1.12))
    fig.update_annotations(font_size=12)
    return fig


def second_order_figure(lines: list[tuple[str, np.ndarray, np.ndarray, str]]) -> go.Figure:
    """|change of the estimate| against eps on log-log axes, one line per (name, eps, change,
    colour key); a slope-1 and a slope-2 guide through the first line's first point."""
    fig = go.Figure()
    for name, eps, change, key in lines:
        fig.add_trace(go.Scatter(x=eps, y=change, mode="lines+markers", name=name,
                                 line=dict(color=color_for(key), width=2.5)))
    eps, change = np.asarray(lines[0][1], dtype=float), np.asarray(lines[0][2], dtype=float)
    low = min(float(np.min(np.asarray(c)[np.asarray(c) > 0])) for _, _, c, _ in lines)
    for power, dash in ((1, "dot"), (2, "dash")):
        guide = low * (eps / eps[0]) ** power
        fig.add_trace(go.Scatter(x=eps, y=guide, mode="lines", name=f"slope {power} (guide)",
                                 line=dict(color="#999", dash=dash, width=1), hoverinfo="skip"))
    fig.update_layout(**LAYOUT, height=470, xaxis=dict(type="log", title="ε (size of the nuisance error)"),
                      yaxis=dict(type="log", title="|change of the estimate| (log scale)", exponentformat="power"))
    fig.update_layout(title=dict(text="How far the estimate moves when the nuisances are off by ε", y=0.98,
                                 yanchor="top"), margin=dict(t=120), legend=dict(y=1.04, yanchor="bottom"))
    return fig


def class_histograms(table, order: list[str]) -> go.Figure:
    """One histogram per method (rows, in ``order``) of the MSE of a class's pooled runs, on a
    shared log scale, each with its median marked."""
    edges = log_bins(table["mse"])
    fig = make_subplots(rows=len(order), cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        subplot_titles=[table.loc[table["method"] == m, "title"].iloc[0] for m in order])
    for i, method in enumerate(order, start=1):
        mse = table.loc[(table["method"] == method) & (table["mse"] > 0), "mse"].to_numpy(dtype=float)
        fig.add_trace(go.Histogram(x=np.log10(mse), xbins=dict(start=edges[0], end=edges[-1],
                                                                 size=edges[1] - edges[0]),
                                   marker_color=color_for(method), showlegend=False,
                                   hovertemplate="%{y} runs<extra></extra>"), row=i, col=1)
        if len(mse):
            fig.add_vline(x=float(np.log10(np.median(mse))), line=dict(color="#222", dash="dash", width=1.5),
                          row=i, col=1)
        fig.update_yaxes(title_text="runs", row=i, col=1)
    ticks = np.arange(np.floor(edges[0]), np.ceil(edges[-1]) + 1)
    fig.update_xaxes(tickvals=list(ticks), ticktext=[f"{10 ** t:g}" for t in ticks], range=[edges[0], edges[-1]])
    fig.update_xaxes(title_text="MSE of f̂ against the truth (log scale; dashed: each method's median)",
                     row=len(order), col=1)
    fig.update_layout(**LAYOUT, height=140 + 150 * len(order), bargap=0.05)
    fig.update_annotations(font_size=12)
    return fig


def class_effects(table, order: list[str], truth: float | None) -> go.Figure:
    """Every run's estimated effect (the average slope of f in the treatment), one row of points
    per method (rows in ``order``, spread vertically at random so that equal values stay visible),
    with the true effect marked by a vertical line and each method's median by a short bar."""
    fig = go.Figure()
    rng = np.random.default_rng(0)
    titles = []
    for i, method in enumerate(order):
        part = table[(table["method"] == method) & table["effect"].notna()]
        if part.empty:
            continue
        title = part["title"].iloc[0]
        titles.append(title)
        x = part["effect"].to_numpy(dtype=float)
        y = i + rng.uniform(-0.22, 0.22, len(x))
        fig.add_trace(go.Scatter(x=x, y=y, mode="markers", name=title, showlegend=False,
                                 marker=dict(color=color_for(method), size=9, opacity=0.75,
                                             line=dict(width=0.5, color="#222")),
                                 customdata=part["data seed"], hovertemplate="seed %{customdata}: %{x:.3g}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[float(np.median(x))] * 2, y=[i - 0.35, i + 0.35], mode="lines", showlegend=False,
                                 line=dict(color="#222", width=2), hoverinfo="skip"))
    if truth is not None and np.isfinite(truth):
        fig.add_vline(x=truth, line=dict(color="#c0392b", width=2.5), annotation_text=f"truth {truth:.3g}",
                      annotation_position="top")
    fig.update_yaxes(tickvals=list(range(len(order))), ticktext=[
        table.loc[table["method"] == m, "title"].iloc[0] if (table["method"] == m).any() else m for m in order],
        range=[-0.6, len(order) - 0.4], autorange="reversed")
    fig.update_xaxes(title_text="estimated effect: average slope of f in the treatment (red: truth; black bar: median)")
    fig.update_layout(**{**LAYOUT, "margin": dict(l=10, r=20, t=40, b=50)}, height=120 + 70 * len(order))
    fig.update_yaxes(automargin=True)
    return fig
