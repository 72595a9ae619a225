"""The standard table of a study cell (median [q1, q3], mean, paired wins and Wilcoxon p against
DML-CMR, fresh-draw median, mean seconds), from the study runner's own summaries."""

from __future__ import annotations

import pandas as pd

from dmlcore.learners.registry import LEARNER_REGISTRY
from dmlcore.learners.select import AUTO, AUTO_BY_DEFAULT
from dmlcore.estimators import METHOD_TITLES, METHODS, get_method
from dmlcore.estimators._registry import PAPER_METHOD, PLUG_IN_METHOD  # noqa: F401 (PLUG_IN_METHOD: for the blocks)
from dmlcore.studies.summarize import paired_table, summary_table

REFERENCE = PAPER_METHOD


def title(method: str) -> str:
    """A method's display name; bench reads titles here only (one place to switch to a registry)."""
    return METHOD_TITLES.get(method, method)


def prose(method: str) -> str:
    """A method's name in a sentence ("the naive plug-in": its registry entry's ``noun``)."""
    return METHODS[method].noun if method in METHODS else title(method)


def is_method(column: pd.Series, method: str) -> pd.Series:
    """Which stored rows ``method`` fitted (a mask of their ``column`` of method names): the rows a table shows,
    named as data. ``method`` must be registered, so that a renamed method fails here, not as an empty table."""
    get_method(method)
    return column == method


def is_learner(column: pd.Series, learner: str) -> pd.Series:
    """:func:`is_method` for a column of learner names: ``learner`` must be in the learner registry."""
    if learner not in LEARNER_REGISTRY:
        raise ValueError(f"unknown learner {learner!r}; known: {', '.join(LEARNER_REGISTRY)}")
    return column == learner


def has(method: str, name: str) -> bool:
    """A registry fact of ``method`` (``has("2sls", "linear_iv")``); False for a name the registry does not know."""
    return method in METHODS and bool(getattr(METHODS[method], name))


def fact(column: pd.Series, name: str) -> pd.Series:
    """:func:`has` for each stored row's method (``fact(rows["method"], "linear_iv")``), a boolean mask."""
    return column.map(lambda m: has(m, name)).astype(bool)


def select(fits: pd.DataFrame, **cell) -> pd.DataFrame:
    """The fits of one cell: ``select(fits, n=1000, iv_strength=0.4)``; ``methods=[...]`` keeps those."""
    methods = cell.pop("methods", None)
    for column, value in cell.items():
        fits = fits[fits[column] == value]
    if methods is not None:
        fits = fits[fits["method"].isin(methods)]
    if fits.empty:
        raise ValueError(f"no rows for {cell}")
    return fits


LOAD = ("load_1min_start", "load_1min_end")   # what a timing row records beside its seconds (bench/perf/load.py)


def timed(rows: pd.DataFrame) -> bool:
    """Whether every row records the load its seconds were measured under: only then are they quoted as times."""
    return all(c in rows for c in LOAD) and bool(rows[list(LOAD)].notna().all().all())


IDLE_MARGIN = 0.5   # the docs call the 2 cores idle while the 1-minute load stays within the run's own threads + this


def idle(loads, threads: int = 1) -> bool:
    """Whether every recorded 1-minute load is low enough to call the machine idle: the load counts the run's
    own ``threads``, so at most ``threads + IDLE_MARGIN`` (1.5 for a one-thread fit)."""
    return max(loads) <= threads + IDLE_MARGIN


UNRECORDED = "load not recorded"   # what a quoted time says when its rows (or its /usr/bin/time log) record no load


def load_said(rows: pd.DataFrame | None = None) -> str:
    """What stands beside seconds taken from ``rows``: their 1-minute load range when every row records it
    (``timed``), else that the load was not recorded. ``None``: a ``/usr/bin/time`` log, which records none."""
    if rows is not None and timed(rows):
        return f"1-minute load {rows[LOAD[0]].min():g}–{rows[LOAD[1]].max():g}"
    return UNRECORDED


NOT_QUOTED = "not quoted, since their rows record no load"   # what a block prints instead of seconds from such rows


def timed_text(rows: pd.DataFrame | None, text, instead: str = NOT_QUOTED) -> str:
    """``text`` (a string, or a callable that makes it, so that a time is not even computed from rows that may
    not quote it) when every one of ``rows`` records the load its seconds were measured under (``timed``), with
    that load range after it; else ``instead``, which must hold no time. ``None``: a ``/usr/bin/time`` log,
    which records no load. A ratio of two times (a speed-up) is a time too: pass both runs' rows. The load range
    stands where ``text`` says ``{load}``, else in brackets after it."""
    if rows is None or not timed(rows):
        return instead
    text, load = text() if callable(text) else text, load_said(rows)
    return text.replace("{load}", load) if "{load}" in text else f"{text} ({load})"


def study_table(fits: pd.DataFrame, *, unit: str = "MSE", reps_label: str = "reps") -> str:
    """The markdown table of one cell's fits (every method, in the rows' order, DML-CMR first: rows of fits run
    in parallel are written as they finish). The mean seconds per fit are a column only when every row records
    the load they were measured under (``timed``)."""
    first = fits["method"] == REFERENCE
    fits = pd.concat([fits[first], fits[~first]])
    seconds = timed(fits)
    loads = (fits[LOAD[0]].min(), fits[LOAD[1]].max()) if seconds else None
    fits = fits.drop(columns=[*LOAD, "cores", "other_work"], errors="ignore")   # the summary groups by the rest
    summary, pairs = summary_table(fits), paired_table(fits)
    fresh = summary["mse_fresh_median"].notna().any()
    head = (f"| method | {reps_label} | median {unit} [q1, q3] | mean | vs DML-CMR: wins of DML-CMR / of method, "
            f"Wilcoxon p |{' median fresh-draw MSE |' if fresh else ''}"
            + (f" mean s/fit (1-minute load {loads[0]:g}–{loads[1]:g}) |" if seconds else ""))
    lines = [head, "|" + "---|" * (5 + fresh + seconds)]
    for _, row in summary.iterrows():
        versus = ""
        if row["method"] != REFERENCE:
            match = pairs[(pairs.arm_a == REFERENCE) & (pairs.arm_b == row["arm"])]
            if len(match):
                m = match.iloc[0]
                versus = f"{m.wins_a} / {m.wins_b} of {m.pairs}, p = {m.wilcoxon_p:.2g}"
        cells = [title(row["method"]), str(row["reps"]),
                 f"{row['median']:.4g} [{row['q1']:.4g}, {row['q3']:.4g}]", f"{row['mean']:.4g}", versus]
        if fresh:
            cells.append("" if pd.isna(row["mse_fresh_median"]) else f"{row['mse_fresh_median']:.4g}")
        if seconds:
            cells.append(f"{row['seconds_mean']:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


FAMILY = tuple(name for name, entry in METHODS.items() if entry.second_stage)     # the DML-CMR family
ROLES = (("outcome_learner", "outcome model s(c)"), ("sampler", "distribution model"))


def nuisance_line(rows: pd.DataFrame) -> str:
    """Which nuisance settings made the DML family's ``rows`` (a bench CSV's, with ``learner``) of a table.
    A row without the setting was made with the default then: the learner's own."""
    family = rows[rows["method"].isin(FAMILY)]
    if family.empty:
        return ""
    said = {}
    for column, role in ROLES:
        part = family[fact(family["method"], "outcome_model")] if column == "outcome_learner" else family
        given = part[column] if column in part else pd.Series(pd.NA, index=part.index)
        for value in sorted(given.where(given.notna(), "own:" + part["learner"].astype(str)).unique()):
            said.setdefault(value, []).append((column, role))
    parts = []
    for value, roles in said.items():
        where = " and ".join(role for _, role in roles)
        if value.startswith("own:"):
            name = value[4:]
            old = (f"the default before `auto`; " if name in AUTO_BY_DEFAULT else "the default; ")
            flags = " ".join(f"--{column.replace('_', '-')} {name}" for column, _ in roles)
            parts.append(f"the learner's own, `{name}`, for the {where} ({old}`{flags}` repeats it)")
        else:
            parts.append(f"`{value}` for the {where}" + (" (the default)" if value == AUTO else ""))
    return "Nuisances of the DML family's rows: " + "; ".join(parts) + "."


def per_seed(fits: pd.DataFrame, method: str, column: str = "mse") -> pd.Series:
    """One method's ``column`` by seed (one cell's fits)."""
    part = fits[fits["method"] == method]
    if part["seed"].duplicated().any():
        raise ValueError(f"{method}: several rows per seed; select one cell first")
    return part.set_index("seed")[column]
