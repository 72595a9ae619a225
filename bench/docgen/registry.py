"""Where each generated piece of the docs is registered: text blocks, PNG figures, derived files.

* ``BLOCKS[id]``: a function of :class:`~bench.docgen.rows.Rows` returning the markdown that stands
  between ``<!-- BEGIN generated:id -->`` and ``<!-- END generated:id -->`` in a doc;
* ``FIGURES[name]``: the rows and the plotly figure behind ``img/name`` (its block is ``img:name``);
* ``FILES[path]``: a file under the repository root derived from rows (its text), such as the
  Learn page's ``bench/results/teaching/measured.csv``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

BLOCKS: dict[str, Callable] = {}
FAMILIES: list[tuple[re.Pattern, Callable]] = []  # parametrised blocks: the id's fields are the arguments
FIGURES: dict[str, "Figure"] = {}
FILES: dict[str, Callable] = {}


def block(name: str):
    """Register the decorated function as the renderer of block ``name``."""
    def register(render: Callable) -> Callable:
        if name in BLOCKS:
            raise ValueError(f"block {name!r} is registered twice")
        BLOCKS[name] = render
        return render
    return register


def family(pattern: str):
    """Register the decorated function for every block id matching ``pattern`` (named groups: keywords),
    e.g. ``rel:(?P<table>[^:]+):(?P<a>[^:]+):(?P<b>[^:]+)``."""
    def register(render: Callable) -> Callable:
        FAMILIES.append((re.compile(pattern), render))
        return render
    return register


def renderer(name: str) -> Callable | None:
    """The function that renders block ``name``, or None."""
    if name in BLOCKS:
        return BLOCKS[name]
    for pattern, render in FAMILIES:
        match = pattern.fullmatch(name)
        if match:
            return lambda rows, r=render, kw=match.groupdict(): r(rows, **kw)
    return None


@dataclass(frozen=True)
class Figure:
    """A PNG in docs/img/: ``fits(rows)`` gives its rows (a study's fits), ``draw(fits)`` the figure,
    ``alt`` its description (``{seeds}`` is filled in from the rows)."""
    fits: Callable
    draw: Callable
    alt: str


def figure(name: str, fits: Callable, draw: Callable, alt: str) -> None:
    """Register ``img/name`` and the block ``img:name`` that shows it (``![alt](img/name)``)."""
    if name in FIGURES:
        raise ValueError(f"figure {name!r} is registered twice")
    FIGURES[name] = Figure(fits, draw, alt)

    def render(rows) -> str:
        done = fits(rows)
        reps = done.groupby(["n", "method"]).size() if len(done) else None
        if reps is None:
            raise ValueError(f"figure {name}: no rows")
        seeds = f"{reps.min()}" if reps.min() == reps.max() else f"{reps.min()}–{reps.max()}"
        return f"![{alt.format(seeds=seeds)}](img/{name})"
    block(f"img:{name}")(render)


def derived_file(path: str):
    """Register the decorated function as the writer of ``path`` (relative to the repository root)."""
    def register(render: Callable) -> Callable:
        FILES[path] = render
        return render
    return register
