"""A study's figures (plotly, no Streamlit): the MSE by N per method on a log scale, as the
paper's Figure 2; each fit's effect estimate with its interval; the held-out residual (real data);
and the paired differences between methods seed by seed.

All take the fits table (``StudyResult.fits``) and draw only finished fits, so a page can call
them again as fits finish. One panel per design other than N (data set, ρ, instrument strength,
...). :func:`study_figures` picks the figures a study has something to show in, with their
headings and notes, for the report and the Study page alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dmlcore.heldout import HELDOUT_FOLDS
from dmlcore.plots import METHOD_COLORS, PALETTE
from dmlcore.estimators import METHOD_TITLES
from dmlcore.studies.summarize import METRIC_LABELS, data_columns, format_value, label, paired_metric

PANEL_HEIGHT = 380
PANEL_GAP = 100  # pixels between panels: the upper one's axis title and the lower one's title
PANEL_TITLE = 26  # pixels of a panel's title
MARGIN = dict(l=60, r=20, t=90, b=50)
X_TITLE = "N (rows)"
SPREAD = 0.8     # share of the room between two values of N that an effect figure's points fill


@dataclass
class StudyFigure:
    """A figure of a study with its PNG file name, heading and a note on how to read it."""

    file: str
    heading: str
    note: str
    figure: go.Figure


def study_figures(fits: pd.DataFrame) -> list[StudyFigure]:
    """The figures with something to show: the MSE by N where a truth is known (or while nothing
    has finished), the effects and the held-out residual where fits have them, the paired differences."""
    has = {column: len(_finished(fits, column)) > 0 for column in ("mse", "effect_estimate", "heldout_relative")}
    out = []
    if has["mse"] or not (has["effect_estimate"] or has["heldout_relative"]):
        out.append(StudyFigure(
            "mse_by_n.png", "MSE by N",
            "Each box: one method's MSE over the seeds (the same data for every method at a seed); whiskers "
            "1.5 IQR, every fit drawn as a point; log scale, as Figure 2 of the DML-CMR paper.", mse_figure(fits)))
    if has["effect_estimate"]:
        out.append(StudyFigure(
            "effects.png", "Effect estimates",
            f"Each point: one fit's estimate of {_estimands(fits)}, with its interval where the method has one "
            "(2SLS: its standard error; spline f: the delta method; other methods give none in a study). "
            "Points of one method sit side by side, one per seed. On a real data set the rows are the same at "
            "every seed, so the spread over seeds is the methods' own randomness, not sampling uncertainty: "
            "the interval speaks to that.", effect_figure(fits)))
    if has["heldout_relative"]:
        out.append(StudyFigure(
            "heldout_score.png", "Held-out residual",
            "How far each fit is from meeting E[Y − f(X) | C] = 0 on rows it was not fitted on: an estimate of "
            f"the mean square of the projected residual over {HELDOUT_FOLDS} held-out folds, divided by Var(Y). "
            "The quantity is 0 at best; its noisy estimate can dip slightly below 0. It needs no truth; it says "
            "how well a fit solves the moment restriction, not its distance to the true f, so use it to set aside "
            "fits that fail the restriction, not to pick a winner among those that pass (docs/coverage.md).",
            heldout_figure(fits)))
    out.append(StudyFigure(
        "paired_differences.png", "Paired differences",
        "a − b on the same seed, of the MSE where the truth is known, else of the held-out residual: below 0, "
        "a did better on that seed.", paired_figure(fits)))
    return out


def mse_figure(fits: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Box plots of the MSE over seeds, by N, one box per arm, log scale."""
    return _box_figure(fits, "mse", "MSE", "MSE by N", title, "{seeds} seeds per box, log scale", log=True)


def heldout_figure(fits: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Box plots of the held-out residual (projected residual / Var(Y)) over seeds, by N, one box per arm."""
    return _box_figure(fits, "heldout_relative", "held-out residual (÷ Var Y)", "Held-out residual by method", title,
                       "{seeds} seeds per box; lower is better", log=False)


def _box_figure(fits: pd.DataFrame, column: str, y_title: str, name: str, title: str | None, detail: str, *,
                log: bool) -> go.Figure:
    """Box plots of ``column`` over seeds, by N, one box per arm; the title is ``title`` or
    ``name (detail)`` with ``{seeds}`` in ``detail`` filled in."""
    done = _finished(fits, column)
    if done.empty:
        return _empty(name, "no finished fits yet")
    colors = _arm_colors(done)
    panels = list(dict.fromkeys(done["panel"]))
    fig = _panel_figure(panels)
    for arm, color, row, part in _by_arm_and_panel(done, colors, panels):
        fig.add_trace(go.Box(x=part["x"], y=_floats(part, column), name=arm, legendgroup=arm, marker_color=color,
                             showlegend=not any(t.name == arm for t in fig.data), boxpoints="all",
                             jitter=0.3, pointpos=0, marker_size=4), row=row, col=1)
    reps = done.groupby(["panel", "x", "arm"]).size()
    seeds = f"{reps.min()}" if reps.min() == reps.max() else f"{reps.min()}–{reps.max()}"
    _lay_out(fig, len(panels), title or f"{name} ({detail.format(seeds=seeds)})")
    fig.update_yaxes(type="log" if log else "linear", title_text=y_title)
    fig.update_xaxes(title_text=X_TITLE, **_x_order(done))
    return fig


def effect_figure(fits: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Each finished fit's effect estimate with its interval, by N: per N the arms side by side,
    within an arm one point per seed."""
    done = _finished(fits, "effect_estimate")
    if done.empty:
        return _empty("Effect estimates", "no finished fit with an effect yet")
    colors = _arm_colors(done)
    arms = list(colors)
    xs = _x_order(done)["categoryarray"]
    panels = list(dict.fromkeys(done["panel"]))
    done = done.sort_values(["panel", "x", "arm", "seed"], kind="stable")
    slot = SPREAD / len(arms)                      # the room of one arm at one N
    k = done.groupby(["panel", "x", "arm"]).cumcount().to_numpy()
    count = done.groupby(["panel", "x", "arm"])["seed"].transform("size").to_numpy()
    done["pos"] = (done["x"].map(xs.index).to_numpy() - SPREAD / 2 + done["arm"].map(arms.index).to_numpy() * slot
                   + (k + 0.5) / count * slot)
    fig = _panel_figure(panels)
    for arm, color, row, part in _by_arm_and_panel(done, colors, panels):
        estimate = part["effect_estimate"].astype(float).to_numpy()
        upper = _floats(part, "effect_ci_upper") - estimate
        lower = estimate - _floats(part, "effect_ci_lower")
        fig.add_trace(go.Scatter(
            x=part["pos"], y=estimate, mode="markers", name=arm, legendgroup=arm, marker_color=color,
            showlegend=not any(t.name == arm for t in fig.data), marker_size=6,
            error_y=dict(type="data", symmetric=False, array=upper, arrayminus=lower, thickness=1.2, width=2),
            customdata=np.c_[part["seed"].astype(str), part["x"]],
            hovertemplate=f"{arm}<br>N %{{customdata[1]}}, seed %{{customdata[0]}}<br>effect %{{y:.4g}}"
                          "<extra></extra>"), row=row, col=1)
    levels = _floats(done, "effect_level")
    levels = np.unique(levels[np.isfinite(levels)])
    level = f"{levels[0]:.0%} " if len(levels) == 1 else ""
    _lay_out(fig, len(panels), title or f"Effect estimates with their {level}intervals, one point per fit")
    fig.update_yaxes(title_text="effect", zeroline=True, zerolinecolor="#888", zerolinewidth=1)
    fig.update_xaxes(title_text=X_TITLE, tickvals=list(range(len(xs))), ticktext=xs,
                     range=[-0.6, len(xs) - 0.4], zeroline=False)
    return fig


def paired_figure(fits: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Per pair of arms, box plots of a − b over the seeds both finished, by N: of the MSE where the
    truth is known, else of the held-out residual (:func:`~dmlcore.studies.summarize.paired_metric`)."""
    done = _finished(fits)
    arms = list(dict.fromkeys(done["arm"])) if not done.empty else []
    if len(arms) < 2:
        return _empty("Paired differences", "needs two methods with finished fits")
    diffs, metrics = [], {}
    for (panel, x), cell in done.groupby(["panel", "x"], sort=False):
        metric = paired_metric(cell)
        if metric is None:
            continue
        metrics.setdefault(panel, metric)
        wide = cell.pivot(index="seed", columns="arm", values=metric).astype(float)
        for i, a in enumerate(arms):
            for b in arms[i + 1:]:
                if a in wide and b in wide:
                    d = (wide[a] - wide[b]).dropna()
                    diffs.append(pd.DataFrame({"panel": panel, "x": x, "pair": f"{a} − {b}", "diff": d.to_numpy()}))
    if not diffs:
        return _empty("Paired differences", "no seed finished for two methods yet")
    table = pd.concat(diffs, ignore_index=True)
    panels = list(dict.fromkeys(table["panel"]))
    fig = _panel_figure(panels)
    for k, pair in enumerate(dict.fromkeys(table["pair"])):
        for row, panel in enumerate(panels, start=1):
            part = table[(table["pair"] == pair) & (table["panel"] == panel)]
            if not part.empty:
                fig.add_trace(go.Box(x=part["x"], y=part["diff"], name=pair, legendgroup=pair,
                                     marker_color=PALETTE[k % len(PALETTE)], boxpoints="all", jitter=0.3,
                                     pointpos=0, marker_size=4,
                                     showlegend=not any(t.name == pair for t in fig.data)), row=row, col=1)
    for row, panel in enumerate(panels, start=1):
        fig.add_hline(y=0, line_color="#555", line_width=1, row=row, col=1)
        fig.update_yaxes(title_text=f"{METRIC_LABELS[metrics[panel]]} difference", zeroline=True, row=row, col=1)
    what = " / ".join(dict.fromkeys(METRIC_LABELS[m] for m in metrics.values()))
    _lay_out(fig, len(panels),
             title or f"Paired differences of the {what}, a − b seed by seed (below 0: a did better)")
    fig.update_xaxes(title_text=X_TITLE, **_x_order(done))
    return fig


def _finished(fits: pd.DataFrame, column: str | None = None) -> pd.DataFrame:
    """Finished fits (with a value in ``column`` when given), with ``panel`` (the design other
    than N, in readable labels) and ``x`` (N as a category)."""
    if fits.empty or "status" not in fits or (column is not None and column not in fits):
        return pd.DataFrame()
    done = fits[fits["status"] == "done"].copy()
    if column is not None:
        done = done[pd.to_numeric(done[column], errors="coerce").notna()]
    if done.empty:
        return done
    options = [c for c in data_columns(done) if c != "n" and done[c].astype(str).nunique() > 1]
    multi = done["dataset"].nunique() > 1 or options

    def panel(row) -> str:
        parts = [f"{label(c)} = {format_value(row[c])}" for c in options if pd.notna(row[c])]
        return ", ".join([row["dataset"], *parts]) if multi else row["dataset"]

    done["panel"] = done.apply(panel, axis=1)
    n = done["n"] if "n" in done else pd.Series(pd.NA, index=done.index)
    done["x"] = n.fillna(done["rows"]).map(format_value)
    if "arm" in done:   # a method's own arm by its title (DML-CMR, Sieve 2SLS); variants keep their names
        done["arm"] = done["arm"].map(lambda arm: METHOD_TITLES.get(arm, arm))
    return done



def _by_arm_and_panel(done: pd.DataFrame, colors: dict, panels: list):
    """(arm, its colour, subplot row, its finished fits in that panel) for each arm and panel with fits."""
    for arm, color in colors.items():
        for row, panel in enumerate(panels, start=1):
            part = done[(done["arm"] == arm) & (done["panel"] == panel)]
            if not part.empty:
                yield arm, color, row, part


def _floats(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The column as floats, NaN where blank (all NaN when the column is absent)."""
    if column not in frame:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)


def _estimands(fits: pd.DataFrame) -> str:
    """The effects the fits estimate, per data set when there are several."""
    done = _finished(fits, "effect_estimate")
    if "effect_estimand" not in done:
        return "the treatment's effect"
    named = done.dropna(subset=["effect_estimand"]).groupby("dataset", sort=False)["effect_estimand"].first()
    if len(named) == 1:
        return named.iloc[0]
    return "; ".join(f"{dataset}: {text}" for dataset, text in named.items()) or "the treatment's effect"


def _arm_colors(done: pd.DataFrame) -> dict:
    """One colour per arm: the method's own when each method is one arm."""
    method_of = dict(zip(done["arm"], done["method"]))
    one_per_method = len(set(method_of.values())) == len(method_of)
    return {arm: (METHOD_COLORS.get(method, PALETTE[i % len(PALETTE)]) if one_per_method
                  else PALETTE[i % len(PALETTE)]) for i, (arm, method) in enumerate(method_of.items())}


def _x_order(done: pd.DataFrame) -> dict:
    values = sorted(set(done["x"]), key=lambda v: float(v))
    return {"categoryorder": "array", "categoryarray": values, "type": "category"}


def _geometry(n_panels: int) -> tuple[int, dict, int]:
    """Figure height, margins and plot-area height in pixels; several panels leave room for the first
    one's title between the legend and the plot."""
    height = PANEL_HEIGHT * n_panels + 90
    margin = dict(MARGIN, t=MARGIN["t"] + (PANEL_TITLE if n_panels > 1 else 0))
    return height, margin, height - margin["t"] - margin["b"]


def _panel_figure(panels: list[str]) -> go.Figure:
    """One row per panel, PANEL_GAP pixels apart, titled when there are several."""
    plot_height = _geometry(len(panels))[2]
    return make_subplots(rows=len(panels), cols=1, subplot_titles=panels if len(panels) > 1 else [""],
                         vertical_spacing=PANEL_GAP / plot_height if len(panels) > 1 else 0.0)


def _lay_out(fig: go.Figure, n_panels: int, title: str) -> None:
    """Height by panels; the title at the very top, the legend below it, above the first panel."""
    height, margin, plot_height = _geometry(n_panels)
    above = 12 + (PANEL_TITLE if n_panels > 1 else 0)
    fig.update_layout(template="plotly_white", boxmode="group", margin=margin, height=height,
                      title=dict(text=title, yref="container", y=1 - 10 / height, yanchor="top"),
                      legend=dict(orientation="h", yanchor="bottom", y=1 + above / plot_height, xanchor="left", x=0.0))


def _empty(title: str, note: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=note, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(template="plotly_white", title=title, height=260,
                      xaxis=dict(visible=False), yaxis=dict(visible=False))
    return fig
