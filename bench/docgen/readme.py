"""README.md: the few measured figures it quotes."""

from __future__ import annotations

from .registry import block
from .tables import is_learner, is_method


@block("readme:bands")
def bands(rows) -> str:
    gb = rows.json("bands-2026-11-26/coverage-demand-iv-gb.json")
    linear = rows.json("bands-2026-11-26/coverage-demand-iv-linear.json")
    out = {s["band"]: s for s in gb["rows"]}["outcome"]
    lin = {s["band"]: s for s in linear["rows"]}["outcome"]
    return (f"on demand-iv at N = {gb['args']['n']} the default band contained the true f at {out['cover']:.1%} of the grid "
            f"with gradient-boosting nuisances (the learner's own, before `auto`; {gb['args']['seeds']} seeds; standard errors {out['se_sd']:.1f} times "
            f"f-hat's spread, so conservative) and at {lin['cover']:.1%} with linear nuisances, whose bias it does not "
            "cover")


@block("readme:weak-grid")
def weak_grid(rows) -> str:
    frame = rows.csv("authors/weak-grid-vs-fresh.csv")
    frame = frame[is_method(frame["method"], "naive")]
    return (f"at instrument strength {frame['iv_strength'].iloc[0]:g}, N = {frame['n'].iloc[0]}, the naive plug-in with "
            f"boosting scored {frame['mse'].min():.2f}–{frame['mse'].max():.2f} on the grid and "
            f"{frame['mse_fresh'].min():.3f}–{frame['mse_fresh'].max():.3f} at fresh draws over {len(frame)} seeds")


@block("readme:threads")
def threads(rows) -> str:
    plan = rows.jsonl("speed.jsonl")
    base = plan[is_method(plan["method"], "dml-cmr") & is_learner(plan["learner"], "nn") & (plan["n"] == 5000) & (plan["folds"] == 10)]
    one, two = (base[base["torch_threads"] == t].iloc[0] for t in (1, 2))
    return (f"{two['seconds'] / one['seconds']:.1f}x: one fit each, {one['seconds']:.0f} s with one thread at a 1-minute "
            f"load of {one['load_avg_1min']:g} and {two['seconds']:.0f} s with two at {two['load_avg_1min']:g}, so the "
            "factor mixes the threads with the load")


@block("readme:image-memory")
def image_memory(rows) -> str:
    step = rows.jsonl("image-step.jsonl")
    before, after = (step[step["keep_freed_memory"] == k] for k in (False, True))
    saved = 1 - after["wall_s"].mean() / before["wall_s"].mean()
    more = after["peak_rss_mb"] / before["peak_rss_mb"].mean() - 1
    return f"{saved:.0%} less time per step, {more.min():.0%} to {more.max():.0%} more peak memory"
