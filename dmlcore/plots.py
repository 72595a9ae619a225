"""Plotly figures of data, runs and losses, shared by the dashboard, the CLI and the benchmarks.

Every function returns a :class:`plotly.graph_objects.Figure` and never imports Streamlit.
Inputs are plain tables and dicts: ``Run.curve()`` frames (columns ``x``, ``estimate``,
``truth``, ``group``; with a band also ``lower``, ``upper``, ``band``), ``record["fold_losses"]``
lists and the ``losses`` dict of a job snapshot
(``{"s"|"g"|"f": {fold: {"epoch": [...], "train": [...], "val": [...]}}}``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dmlcore.estimators import METHODS

# One colour per method, the same in every figure; the truth is always black and dashed.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#7f7f7f")
# the methods' colours are their registry entries'; "ols" is the teaching pages' plain regression
METHOD_COLORS = {**{name: m.colour for name, m in METHODS.items() if m.colour}, "ols": "#ff7f0e"}
TRUTH_COLOR = "#111111"
MODEL_TITLES = {"s": "outcome model s(c) = E[Y | C]", "g": "conditional distribution g",
                "f": "second stage f"}
_LAYOUT = dict(template="plotly_white", margin=dict(l=50, r=20, t=50, b=45),
               legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0))


def color_for(key: str, index: int = 0) -> str:
    """The colour of a method (by its key) or, for anything else, of position ``index``."""
    return METHOD_COLORS.get(key, PALETTE[index % len(PALETTE)])


# ----------------------------------------------------------------- curves
def curve_figure(curves: Sequence[tuple[str, pd.DataFrame]], *, x_title: str = "treatment",
                 y_title: str = "causal function", title: str | None = None,
                 methods: Sequence[str] | None = None, max_columns: int = 4,
                 clip_to_truth: bool = True, lines_in_view: bool = False) -> go.Figure:
    """Estimated causal functions of several runs, with the truth where it is known.

    Parameters
    ----------
    curves : sequence of (name, frame)
        One ``Run.curve()`` table per run: columns ``x``, ``estimate``, ``truth``, ``group``, and
        for a run with a band ``lower``, ``upper`` and ``band`` (what the band is, in words),
        drawn as a shaded area in the run's colour under its line.
    methods : sequence of str, optional
        The method key of each curve, for its colour.
    max_columns : int
        Panels per row when the curves have several groups (one panel per group).
    clip_to_truth : bool
        Keep each panel's y axis within the truth's range (without a truth and with bands, the
        estimates' range) widened by its own span, so that one far-off estimate or a very wide
        band does not flatten the others; moderate bands stay in view.
    lines_in_view : bool
        With ``clip_to_truth``, keep every estimated line in view too (only bands may leave).
    """
    groups: list[str] = []
    for _, frame in curves:
        for g in frame["group"].astype(str).unique():
            if g not in groups:
                groups.append(g)
    groups = groups or ["all"]
    cols = min(max_columns, len(groups))
    rows = math.ceil(len(groups) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=groups if len(groups) > 1 else None,
                        shared_xaxes=True, horizontal_spacing=0.05,
                        vertical_spacing=0.12 if rows > 1 else 0.08)
    colors = _distinct_colors([methods[i] if methods is not None and i < len(methods) else name
                               for i, (name, _) in enumerate(curves)])
    truth_drawn = False
    banded: set[str] = set()
    for gi, group in enumerate(groups):
        r, c = gi // cols + 1, gi % cols + 1
        truth_done = False
        values, truth_values, band_values = [], [], []
        for i, (name, frame) in enumerate(curves):
            part = frame[frame["group"].astype(str) == group].sort_values("x")
            if part.empty:
                continue
            if not truth_done and "truth" in part and part["truth"].notna().any():
                fig.add_trace(go.Scatter(x=part["x"], y=part["truth"], name="truth", mode="lines",
                                         line=dict(color=TRUTH_COLOR, dash="dash", width=2.5),
                                         legendgroup="truth", showlegend=not truth_drawn),
                              row=r, col=c)
                truth_done = truth_drawn = True
                truth_values = part["truth"].dropna().tolist()
            band = _band_trace(name, part, colors[i], show_legend=name not in banded)
            if band is not None:
                fig.add_trace(band, row=r, col=c)
                banded.add(name)
                band_values += part["lower"].tolist() + part["upper"].tolist()
            fig.add_trace(go.Scatter(x=part["x"], y=part["estimate"], name=name, mode="lines",
                                     line=dict(color=colors[i], width=2),
                                     legendgroup=name, showlegend=gi == 0), row=r, col=c)
            values += part["estimate"].dropna().tolist()
        reference = (truth_values + values if lines_in_view and truth_values else truth_values) or (
            values if band_values else [])
        y_range = _focus_range(reference, values + band_values) if clip_to_truth else None
        if y_range is not None:
            fig.update_yaxes(range=y_range, row=r, col=c)
    # the legend below the x axes' titles (60 px down), its entries in rows, so that long run names
    # never narrow the curves; the bottom margin grows to hold it
    height, top = (250 * rows + 150 if rows > 1 else 480), 60 if title is None else 80
    fig.update_layout(**_LAYOUT, title=title, height=height)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-62 / (height - top - 50), xanchor="left",
                                  x=0.0, traceorder="normal"),
                      margin=dict(l=60, r=10, t=top, b=50))
    for c in range(1, cols + 1):
        fig.update_xaxes(title_text=x_title, row=rows, col=c)
    for r in range(1, rows + 1):
        fig.update_yaxes(title_text=y_title if r == (rows + 1) // 2 else None, row=r, col=1)
    return fig


def _band_trace(name: str, part: pd.DataFrame, color: str, show_legend: bool) -> go.Scatter | None:
    """The shaded band of one curve panel (a closed outline, upper then lower reversed), or None
    when the frame has no finite band there."""
    if not {"lower", "upper"} <= set(part.columns):
        return None
    part = part[np.isfinite(part["lower"].astype(float)) & np.isfinite(part["upper"].astype(float))]
    if part.empty:
        return None
    kind = str(part["band"].iloc[0]) if "band" in part else "band"
    outline = pd.concat([part, part.iloc[::-1]])
    y = np.concatenate([part["upper"].to_numpy(float), part["lower"].to_numpy(float)[::-1]])
    return go.Scatter(x=outline["x"], y=y, name=f"{name}: {kind}", mode="lines", fill="toself",
                      fillcolor=_rgba(color, 0.2), line=dict(color=color, width=0), hoveron="points",
                      legendgroup=name, showlegend=show_legend,
                      customdata=outline[["lower", "upper"]].to_numpy(float),
                      hovertemplate=(f"{name}<br>{kind}<br>x %{{x:.4g}}: "
                                     f"[%{{customdata[0]:.4g}}, %{{customdata[1]:.4g}}]<extra></extra>"))


def _rgba(color: str, alpha: float) -> str:
    """'#1f77b4' with opacity ``alpha`` as an rgba() string."""
    red, green, blue = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _distinct_colors(keys: Sequence[str]) -> list[str]:
    """A colour per curve: its method's colour the first time, then unused palette colours."""
    used: list[str] = []
    for i, key in enumerate(keys):
        color = color_for(key, i)
        if color in used:
            color = next((c for c in PALETTE if c not in used and c not in METHOD_COLORS.values()),
                         PALETTE[i % len(PALETTE)])
        used.append(color)
    return used


def _focus_range(reference: list, values: list) -> list[float] | None:
    """A y range around ``reference`` (the truth) that covers ``values`` (estimates, bands) within
    its span on either side and cuts off what lies further out (it leaves the panel)."""
    reference = [v for v in reference if np.isfinite(v)]
    if not reference:
        return None
    lo, hi = min(reference), max(reference)
    span = max(hi - lo, 1e-9 + 0.1 * abs(hi))
    vals = reference + [v for v in values if np.isfinite(v)]
    bottom, top = max(min(vals), lo - span), min(max(vals), hi + span)
    pad = 0.05 * (top - bottom)
    return [bottom - pad, top + pad]


# ----------------------------------------------------------------- losses
def losses_from_record(fold_losses: Sequence[Mapping]) -> dict:
    """``record["fold_losses"]`` as ``{"s"|"g": {fold: history}}``, the shape of a job's losses."""
    out: dict = {}
    for entry in fold_losses or []:
        for model in ("s", "g"):
            if entry.get(model):
                out.setdefault(model, {})[entry.get("fold")] = entry[model]
    return out


def _thin(hist: Mapping, max_points: int | None) -> tuple[list, list, list]:
    """Every k-th point of a loss history (and always the last), at most about ``max_points``."""
    epochs, train, val = list(hist.get("epoch", [])), list(hist.get("train", [])), list(hist.get("val", []))
    if max_points and len(epochs) > max_points:
        step = math.ceil(len(epochs) / max_points)
        keep = list(range(0, len(epochs), step))
        if keep[-1] != len(epochs) - 1:
            keep.append(len(epochs) - 1)
        epochs = [epochs[i] for i in keep]
        train = [train[i] for i in keep]
        val = [val[i] for i in keep] if val else val
    return epochs, train, val


def loss_figure(losses: Mapping, *, models: Sequence[str] = ("s", "g", "f"),
                title: str | None = None, height: int = 340, max_points: int | None = None) -> go.Figure:
    """Loss histories, one panel per model, one colour per fold; training solid, validation dashed.

    ``losses`` is ``{"s"|"g"|"f": {fold: {"epoch": [...], "train": [...], "val": [...]}}}``.
    Losses are on the standardized scale; the conditional distribution model reports a
    negative log-likelihood, which may be negative. ``max_points`` thins long histories (for
    live charts that are redrawn every second).
    """
    present = [m for m in models if losses.get(m)]
    if not present:
        fig = go.Figure()
        fig.update_layout(**_LAYOUT, title=title or "No losses recorded yet", height=200)
        return fig
    fig = make_subplots(rows=1, cols=len(present), subplot_titles=[MODEL_TITLES.get(m, m) for m in present],
                        horizontal_spacing=0.08)
    for ci, model in enumerate(present, start=1):
        folds = losses[model]
        for fi, fold in enumerate(sorted(folds, key=lambda f: -1 if f is None else f)):
            epochs, train, val = _thin(folds[fold], max_points)
            color = "#444444" if fold is None else PALETTE[fi % len(PALETTE)]
            name = "all rows" if fold is None else f"fold {fold}"
            mode = "lines" if len(epochs) > 1 else "markers"   # a closed-form fit (linear) has one point
            fig.add_trace(go.Scatter(x=epochs, y=train, mode=mode, name=name,
                                     legendgroup=name, showlegend=ci == 1 or fold is None,
                                     line=dict(color=color, width=1.6),
                                     hovertemplate=f"{name} train<br>epoch %{{x}}<br>loss %{{y:.4f}}<extra></extra>"),
                          row=1, col=ci)
            if any(v is not None for v in val):
                fig.add_trace(go.Scatter(x=epochs, y=[np.nan if v is None else v for v in val], mode=mode,
                                         name=f"{name} (validation)", legendgroup=name, showlegend=False,
                                         line=dict(color=color, width=1.6, dash="dot"),
                                         hovertemplate=f"{name} validation<br>epoch %{{x}}<br>loss %{{y:.4f}}<extra></extra>"),
                              row=1, col=ci)
        fig.update_xaxes(title_text="epoch / stage", row=1, col=ci)
        if _wide_positive(folds.values()):
            fig.update_yaxes(type="log", dtick=1, row=1, col=ci)
    fig.update_yaxes(title_text="loss (solid: train, dotted: validation)", row=1, col=1)
    fig.update_layout(**_LAYOUT, title=title, height=height)
    fig.update_layout(legend=dict(orientation="v", yanchor="top", y=1.0, xanchor="left", x=1.01),
                      margin=dict(l=60, r=10, t=40 if title is None else 70, b=45))
    return fig


def _wide_positive(histories) -> bool:
    """True when all losses are positive and span more than two decades (draw on a log axis)."""
    values = [v for h in histories for key in ("train", "val") for v in h.get(key, []) if v is not None]
    return bool(values) and min(values) > 0 and max(values) / min(values) > 100


def second_stage_figure(fold_losses: Sequence[Mapping], title: str | None = None) -> go.Figure:
    """Second-stage loss of f on each fold's rows (standardized scale), as bars."""
    folds = [f"fold {e.get('fold')}" for e in fold_losses]
    values = [e.get("second_stage_loss") for e in fold_losses]
    fig = go.Figure(go.Bar(x=folds, y=values, marker_color="#1f77b4",
                           hovertemplate="%{x}<br>loss %{y:.4f}<extra></extra>"))
    fig.update_layout(**_LAYOUT, title=title or "Second-stage loss per fold", height=300,
                      yaxis_title="mean (t - mean f(x))² / Var(y)")
    return fig


# ------------------------------------------------------------------ data
def column_figure(table: pd.DataFrame, x: str, y: str | None = None, *, color: str | None = None,
                  max_points: int = 5000) -> go.Figure:
    """A histogram of ``x``, or a scatter plot of ``y`` against ``x`` (a sample of rows)."""
    frame = table if len(table) <= max_points else table.sample(max_points, random_state=0)
    if y is None or y == x:
        fig = go.Figure(go.Histogram(x=frame[x], nbinsx=40, marker_color="#1f77b4"))
        fig.update_layout(**_LAYOUT, xaxis_title=x, yaxis_title="rows", height=360, bargap=0.02)
        return fig
    marker = dict(size=5, opacity=0.6, color="#1f77b4")
    if color is not None and pd.api.types.is_numeric_dtype(frame[color]):
        marker.update(color=frame[color], colorscale="Viridis", showscale=True,
                      colorbar=dict(title=color))
    fig = go.Figure(go.Scattergl(x=frame[x], y=frame[y], mode="markers", marker=marker,
                                 hovertemplate=f"{x} %{{x}}<br>{y} %{{y}}<extra></extra>"))
    fig.update_layout(**_LAYOUT, xaxis_title=x, yaxis_title=y, height=360)
    if len(table) > max_points:
        fig.update_layout(title=f"{max_points:,} of {len(table):,} rows")
    return fig


def image_grid_figure(images: Sequence[np.ndarray], titles: Sequence[str], columns: int = 6) -> go.Figure:
    """A row (or grid) of grey-scale images with titles, for image data sets."""
    cols = min(columns, len(images)) or 1
    rows = math.ceil(len(images) / cols) or 1
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=list(titles), horizontal_spacing=0.02,
                        vertical_spacing=0.08)
    for i, img in enumerate(images):
        fig.add_trace(go.Heatmap(z=np.flipud(img), colorscale="gray_r", showscale=False), row=i // cols + 1,
                      col=i % cols + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x")
    fig.update_layout(**_LAYOUT, height=170 * rows + 40)
    return fig


# ------------------------------------------------------------- teaching
def folds_figure(folds: Sequence[np.ndarray], n: int, *, max_rows: int = 120) -> go.Figure:
    """Which rows train and which rows use each fold's nuisances, for K-fold cross-fitting.

    One line per fold k: cells of the rows in fold k are "scored" (the second stage uses s_k and
    g_k there), all others "train" s_k and g_k. Shows the first ``max_rows`` rows.
    """
    shown = min(n, max_rows)
    k = len(folds)
    z = np.zeros((k, shown))
    for i, rows in enumerate(folds):
        z[i, :] = 1.0
        inside = np.asarray(rows)[np.asarray(rows) < shown]
        z[i, inside] = 2.0
    text = np.where(z == 2.0, "held out: second stage uses s_k, g_k here", "trains s_k and g_k")
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(shown)), y=[f"fold {i}" for i in range(k)], zmin=1, zmax=2,
        colorscale=[[0, "#c6dbef"], [0.5, "#c6dbef"], [0.5, "#e6550d"], [1, "#e6550d"]],
        showscale=False, xgap=1, ygap=2, customdata=text,
        hovertemplate="row %{x}, %{y}: %{customdata}<extra></extra>"))
    fig.update_layout(**_LAYOUT, height=70 + 32 * k, xaxis_title=f"data row (first {shown} of {n:,})",
                      yaxis=dict(autorange="reversed"),
                      title="Blue: trains the nuisances s_k, g_k · orange: held out, scored with them")
    return fig


def sweep_figure(x: Sequence[float], panels: Sequence[tuple[str, Sequence[float], float | None]], *,
                 x_title: str, text: Sequence[str] | None = None, log_x: bool = False,
                 title: str | None = None, color: str = PALETTE[0]) -> go.Figure:
    """Quantities against one setting, one panel each: ``panels`` holds (title, values, reference
    value or None, drawn as a dashed line); ``text`` labels the points on hover."""
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p[0] for p in panels],
                        horizontal_spacing=0.12)
    for ci, (name, values, reference) in enumerate(panels, start=1):
        hover = f"{x_title} %{{x:g}}<br>{name} %{{y:.3g}}" + ("<br>%{text}" if text is not None else "")
        fig.add_trace(go.Scatter(x=list(x), y=list(values), mode="lines+markers", name=name, showlegend=False,
                                 line=dict(color=color, width=2), marker=dict(size=8),
                                 text=list(text) if text is not None else None,
                                 hovertemplate=hover + "<extra></extra>"),
                      row=1, col=ci)
        if reference is not None:
            fig.add_hline(y=reference, line=dict(color=TRUTH_COLOR, dash="dash"), row=1, col=ci)
            shown = [v for v in values if v is not None and np.isfinite(v)] + [reference]
            pad = 0.08 * (max(shown) - min(shown) or abs(reference) or 1.0)
            fig.update_yaxes(range=[min(shown) - pad, max(shown) + pad], row=1, col=ci)
        fig.update_xaxes(title_text=x_title, type="log" if log_x else None, tickvals=list(x),
                         ticktext=[f"{v:g}" for v in x], row=1, col=ci)
    fig.update_layout(**_LAYOUT, title=title, height=340)
    if title is not None:
        fig.update_layout(margin=dict(t=90))
    return fig


def bar_figure(names: Sequence[str], values: Sequence[float], *, keys: Sequence[str] | None = None,
               y_title: str = "", title: str | None = None, reference: float | None = None,
               reference_name: str = "truth") -> go.Figure:
    """Bars, one per method (coloured by method key), with an optional reference line."""
    colors = [color_for(keys[i] if keys else n, i) for i, n in enumerate(names)]
    fig = go.Figure(go.Bar(x=list(names), y=list(values), marker_color=colors,
                           text=[f"{v:.3g}" for v in values], textposition="outside"))
    if reference is not None:
        fig.add_hline(y=reference, line=dict(color=TRUTH_COLOR, dash="dash"),
                      annotation_text=reference_name, annotation_position="top left")
    fig.update_layout(**_LAYOUT, title=title, yaxis_title=y_title, height=320)
    return fig


# ----------------------------------------------------------------- interval sets
def interval_sets_figure(rows: Sequence[tuple[str, Sequence[Sequence[float | None]]]], *,
                         estimate: float | None = None, x_title: str = "effect") -> go.Figure:
    """One row per interval or confidence set: ``(label, pieces)`` with pieces ``[lower, upper]``
    (None for an infinite end, drawn to the edge with an arrow); an empty set is written as such.
    ``estimate`` is marked by a dotted line."""
    ends = [e for _, pieces in rows for p in pieces for e in p if e is not None]
    if estimate is not None:
        ends.append(estimate)
    lo, hi = (min(ends), max(ends)) if ends else (-1.0, 1.0)
    pad = 0.25 * (hi - lo) if hi > lo else 1.0
    left, right = lo - pad, hi + pad
    fig = go.Figure()
    labels = [label for label, _ in rows]
    for i, (label, pieces) in enumerate(rows):
        color = PALETTE[i % len(PALETTE)]
        if not pieces:
            fig.add_annotation(x=(left + right) / 2, y=label, text="empty set", showarrow=False,
                               font=dict(color=color))
        for piece in pieces:
            a = left if piece[0] is None else piece[0]
            b = right if piece[1] is None else piece[1]
            symbols = ["arrow-left" if piece[0] is None else "line-ns",
                       "arrow-right" if piece[1] is None else "line-ns"]
            fig.add_trace(go.Scatter(x=[a, b], y=[label, label], mode="lines+markers", showlegend=False,
                                     line=dict(color=color, width=6),
                                     marker=dict(symbol=symbols, size=14, color=color,
                                                 line=dict(color=color, width=2)),
                                     hovertemplate=f"{label}<br>%{{x:.4g}}<extra></extra>"))
    if estimate is not None:
        fig.add_vline(x=estimate, line=dict(color=TRUTH_COLOR, dash="dot"),
                      annotation_text=f"estimate {estimate:.4g}", annotation_position="top")
    fig.update_layout(**_LAYOUT, height=90 + 55 * len(rows), xaxis_title=x_title, showlegend=False)
    fig.update_xaxes(range=[left, right])
    fig.update_yaxes(categoryorder="array", categoryarray=labels[::-1], automargin=True)
    return fig
