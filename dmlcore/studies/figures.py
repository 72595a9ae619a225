"""A study's figures (plotly, no Streamlit): the MSE by N per method on a log scale, as the
paper's Figure 2; each method's estimated f over the seeds against the true f; each fit's plug-in
and debiased effect estimates with their intervals and the true effect; the held-out residual
(real data); and the paired differences between methods seed by seed.

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

from dmlcore.data.registry import no_truth
from dmlcore.runs.heldout_residual import HELDOUT_FOLDS
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


def study_figures(fits: pd.DataFrame, curves: dict | None = None) -> list[StudyFigure]:
    """The figures with something to show: the MSE by N where a truth is known (or while nothing
    has finished), the estimated curves over seeds (``curves``: fit key -> :func:`curve_points`'s),
    the effects and the held-out residual where fits have them, the paired differences."""
    has = {column: len(_finished(fits, column)) > 0 for column in ("mse", "effect_estimate", "heldout_relative")}
    out = []
    if has["mse"] or not (has["effect_estimate"] or has["heldout_relative"]):
        out.append(StudyFigure(
            "mse_by_n.png", "MSE by N",
            f"Each box: one method's MSE over the seeds (the same data for every method at a seed); whiskers "
            f"1.5 IQR, every fit drawn as a point; log scale, as Figure 2 of the DML-CMR paper. The MSE: "
            f"{mse_protocol(fits)}. The MSE on fresh draws from the data's own distribution is in the summary "
            f"table and fits.csv (mse_fresh).", mse_figure(fits)))
    drawn = curve_figure(fits, curves or {})
    if drawn is not None:
        figure, note = drawn
        out.append(StudyFigure("curves.png", "Estimated curves over seeds", note, figure))
    if has["effect_estimate"]:
        out.append(StudyFigure("effects.png", "Effect estimates", effect_note(fits), effect_figure(fits)))
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


def mse_protocol(fits: pd.DataFrame) -> str:
    """Where each data set's MSE (the boxes) is scored, from its fits' records (``mse_where``); the
    data set's own test points when no finished fit recorded it (fits stored before it was kept); none
    when no fit has finished."""
    done = _finished(fits, "mse")
    if done.empty:      # nothing finished (every fit failed, or none has yet): no protocol to name
        return "not scored yet: no fit has finished, so no MSE exists (the protocol is named once one does)"
    if "mse_where" not in done or done["mse_where"].isna().all():
        return "f-hat against the true f on the data set's own test points (the paper's headline protocol)"
    named = done.dropna(subset=["mse_where"]).groupby("dataset", sort=False)["mse_where"].first()
    if len(named) == 1:
        return named.iloc[0]
    return "; ".join(f"{dataset}: {text}" for dataset, text in named.items())


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


EFFECT_KINDS = (("effect_plug_in", "Plug-in: the mean slope of f-hat"),
                ("effect_debiased", "Debiased: plug-in + correction"))


def _effect_kinds(done: pd.DataFrame) -> list[tuple[str, str]]:
    """The effects drawn side by side: plug-in and debiased where fits have them, else the headline."""
    kinds = [(col, name) for col, name in EFFECT_KINDS if len(_floats(done, col)) and np.isfinite(_floats(done, col)).any()]
    return kinds or [("effect_estimate", "Effect")]


def effect_note(fits: pd.DataFrame) -> str:
    """The effect figure's caption, from the fits it draws (which intervals exist, where the truth is)."""
    done = _finished(fits, "effect_estimate")
    kinds = _effect_kinds(done)
    parts = [f"Each point: one fit's estimate of {_estimands(fits)}, with its interval where the fit has one; "
             "points of one method sit side by side, one per seed."]
    for column, name in kinds:
        with_ci = [arm for arm, part in done.groupby("arm", sort=False)
                   if np.isfinite(_floats(part, f"{column}_ci_lower" if column != "effect_estimate" else "effect_ci_lower")).any()]
        side = "" if len(kinds) == 1 else ("Left, " if column == kinds[0][0] else "Right, ")
        kind = name.split(':')[0].lower()
        parts.append(f"{side}{kind}: intervals for {', '.join(with_ci)}." if with_ci else
                     f"{side}{kind}: no interval (none of these methods has one for it).")
    if len(kinds) == 2:
        own = [arm for arm, part in done.groupby("arm", sort=False)
               if np.allclose(_floats(part, "effect_estimate"), _floats(part, "effect_plug_in"), equal_nan=True)]
        parts.append("The effect each method reports (fits.csv's effect_estimate) is the debiased one" +
                     (f", except {', '.join(own)}, which reports its own (the plug-in)." if own else "."))
    if np.isfinite(_floats(done, "effect_truth")).any():
        parts.append("The dashed black line: the true effect of the design (fits.csv's effect_truth).")
    else:
        parts.append("No true effect is known here.")
    if done["dataset"].map(no_truth).any():
        parts.append("On a real data set the rows are the same at every seed, so the spread over seeds is the "
                     "methods' own randomness, not sampling uncertainty: the interval speaks to that.")
    return " ".join(parts)


def effect_figure(fits: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Each finished fit's effect estimate with its interval, by N, the plug-in and the debiased effect
    side by side (one column each), the true effect marked where known: per N the arms side by side,
    within an arm one point per seed."""
    done = _finished(fits, "effect_estimate")
    if done.empty:
        return _empty("Effect estimates", "no finished fit with an effect yet")
    colors = _arm_colors(done)
    arms = list(colors)
    xs = _x_order(done)["categoryarray"]
    panels = list(dict.fromkeys(done["panel"]))
    kinds = _effect_kinds(done)
    done = done.sort_values(["panel", "x", "arm", "seed"], kind="stable")
    slot = SPREAD / len(arms)                      # the room of one arm at one N
    k = done.groupby(["panel", "x", "arm"]).cumcount().to_numpy()
    count = done.groupby(["panel", "x", "arm"])["seed"].transform("size").to_numpy()
    done["pos"] = (done["x"].map(xs.index).to_numpy() - SPREAD / 2 + done["arm"].map(arms.index).to_numpy() * slot
                   + (k + 0.5) / count * slot)
    plot_height = _geometry(len(panels))[2]
    titles = [f"{name}" + (f" · {panel}" if len(panels) > 1 else "") for panel in panels for _, name in kinds]
    fig = make_subplots(rows=len(panels), cols=len(kinds), subplot_titles=titles, shared_yaxes=True,
                        horizontal_spacing=0.04,
                        vertical_spacing=PANEL_GAP / plot_height if len(panels) > 1 else 0.0)
    for col, (column, _) in enumerate(kinds, start=1):
        ends = ("effect_ci_lower", "effect_ci_upper") if column == "effect_estimate" else (
            f"{column}_ci_lower", f"{column}_ci_upper")
        for arm, color, row, part in _by_arm_and_panel(done, colors, panels):
            estimate = _floats(part, column)
            fig.add_trace(go.Scatter(
                x=part["pos"], y=estimate, mode="markers", name=arm, legendgroup=arm, marker_color=color,
                showlegend=not any(t.name == arm for t in fig.data), marker_size=6,
                error_y=dict(type="data", symmetric=False, array=_floats(part, ends[1]) - estimate,
                             arrayminus=estimate - _floats(part, ends[0]), thickness=1.2, width=2),
                customdata=np.c_[part["seed"].astype(str), part["x"]],
                hovertemplate=f"{arm}<br>N %{{customdata[1]}}, seed %{{customdata[0]}}<br>effect %{{y:.4g}}"
                              "<extra></extra>"), row=row, col=col)
        for row, panel in enumerate(panels, start=1):
            _truth_marks(fig, done[done["panel"] == panel], xs, row, col)
    levels = _floats(done, "effect_level")
    levels = np.unique(levels[np.isfinite(levels)])
    level = f"{levels[0]:.0%} " if len(levels) == 1 else ""
    _lay_out(fig, len(panels), title or f"Effect estimates with their {level}intervals, one point per fit")
    room = 40                                      # the columns' titles sit between the legend and the plots
    fig.update_layout(height=fig.layout.height + room, margin_t=fig.layout.margin.t + room,
                      title_y=1 - 10 / (fig.layout.height + room), legend_y=1 + (PANEL_TITLE + 14) / plot_height)
    fig.update_yaxes(zeroline=True, zerolinecolor="#888", zerolinewidth=1)
    fig.update_yaxes(title_text="effect", col=1)
    fig.update_xaxes(title_text=X_TITLE, tickvals=list(range(len(xs))), ticktext=xs,
                     range=[-0.6, len(xs) - 0.4], zeroline=False)
    return fig


def _truth_marks(fig: go.Figure, part: pd.DataFrame, xs: list, row: int, col: int) -> None:
    """A dashed black segment at the true effect over each N's points (the mean over its fits: the
    design's truth)."""
    truth = part.assign(truth=_floats(part, "effect_truth")).dropna(subset=["truth"])
    for x, cell in truth.groupby("x", sort=False):
        centre = xs.index(x)
        fig.add_trace(go.Scatter(x=[centre - SPREAD / 2, centre + SPREAD / 2], y=[cell["truth"].mean()] * 2,
                                 mode="lines", line=dict(color="black", dash="dash", width=2), name="true effect",
                                 legendgroup="truth", showlegend=not any(t.name == "true effect" for t in fig.data),
                                 hovertemplate="true effect %{y:.4g}<extra></extra>"), row=row, col=col)


CURVE_SEEDS = 20   # seeds drawn per method in the curves figure


def curve_figure(fits: pd.DataFrame, curves: dict) -> tuple[go.Figure, str] | None:
    """Each method's estimated f over the seeds (one thin line per seed) against the true f, one panel per
    method, in one design cell (the first with curves; its largest N) and one curve group (the first:
    a customer type, or the averaged E[Y | do(a)]); with its note. None when no fit has a curve."""
    done = _finished(fits)
    if done.empty or not curves:
        return None
    done = done[done["key"].isin(curves)]
    if done.empty:
        return None
    panel = done["panel"].iloc[0]
    cell = done[done["panel"] == panel]
    x_top = max(cell["x"], key=float)
    cell = cell[cell["x"] == x_top]
    colors = _arm_colors(cell)
    arms = list(colors)
    first = curves[cell["key"].iloc[0]]
    group = first.get("group", [None])[0]
    cols = min(3, len(arms))
    rows = -(-len(arms) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=arms, shared_yaxes=True, horizontal_spacing=0.05,
                        vertical_spacing=0.12 if rows > 1 else 0.0)
    truth_drawn = False
    for i, arm in enumerate(arms):
        row, col = i // cols + 1, i % cols + 1
        fits_of_arm = cell[cell["arm"] == arm].sort_values("seed").head(CURVE_SEEDS)
        for j, (key, seed) in enumerate(zip(fits_of_arm["key"], fits_of_arm["seed"])):
            frame = _curve_frame(curves[key], group)
            fig.add_trace(go.Scatter(x=frame["x"], y=frame["estimate"], mode="lines", opacity=0.45,
                                     line=dict(color=colors[arm], width=1.2), name=arm, legendgroup=arm,
                                     showlegend=j == 0, hovertemplate=f"{arm}, seed {seed}<extra></extra>"),
                          row=row, col=col)
            if j == 0 and frame["truth"].notna().any():
                fig.add_trace(go.Scatter(x=frame["x"], y=frame["truth"], mode="lines", name="true f",
                                         line=dict(color="black", width=2.5), legendgroup="truth",
                                         showlegend=not truth_drawn, hovertemplate="true f<extra></extra>"),
                              row=row, col=col)
                truth_drawn = True
    seeds = cell.groupby("arm").size().clip(upper=CURVE_SEEDS)
    count = f"{seeds.min()}" if seeds.min() == seeds.max() else f"{seeds.min()}–{seeds.max()}"
    where = f"{panel}, N = {x_top}" + (f", {group}" if group else "")
    height = 360 * rows + 120
    fig.update_layout(template="plotly_white", height=height, margin=dict(l=60, r=20, t=110, b=50),
                      title=dict(text=f"Estimated f, one line per seed ({count} per method): {where}",
                                 yref="container", y=1 - 10 / height, yanchor="top"),
                      legend=dict(orientation="h", yanchor="bottom", y=1.06 if rows == 1 else 1.03, x=0.0))
    fig.update_xaxes(title_text=first.get("treatment") or "treatment")
    fig.update_yaxes(title_text="f", col=1)
    others = [p for p in dict.fromkeys(done["panel"]) if p != panel] or len(set(done["x"])) > 1
    note = (f"Each thin line: one fit's estimated causal function f-hat ({where}; at most {CURVE_SEEDS} seeds per "
            f"method), the thick black line the true f" + ("" if truth_drawn else " (not known here)") +
            ". Lines that scatter around the truth show variance; lines that agree with each other but not with "
            "the truth show bias." + (" Only this design cell is drawn; the others are in fits.csv's MSE."
                                      if others else ""))
    return fig, note


def _curve_frame(curve: dict, group) -> pd.DataFrame:
    frame = pd.DataFrame({k: curve[k] for k in ("x", "estimate", "truth", "group") if k in curve})
    if group is not None and "group" in frame:
        frame = frame[frame["group"] == group]
    frame["truth"] = pd.to_numeric(frame.get("truth"), errors="coerce")
    return frame.sort_values("x")


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
    done["x"] = (n.fillna(done["rows"]) if "rows" in done else n).map(format_value)
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
