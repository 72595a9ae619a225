"""Numbers and the words for comparisons, by one significance standard for every doc.

The standard (stated in docs/benchmarks.md, block ``standard``): two methods are compared on the
seeds both were fitted on (the same data per seed) by the two-sided Wilcoxon signed-rank test of
their paired differences. A method "beats" / "is ahead of" another, or the other "is behind",
only when p < 0.05; otherwise the two are "level" and the doc names no winner (no "tendency").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dmlcore.studies.summarize import ALPHA, signed_rank_p, verdict  # noqa: F401  (ALPHA: the one standard's)


def num(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures, without an exponent for ordinary magnitudes."""
    text = f"{x:.{digits}g}"
    if "e" in text and 1e-4 <= abs(x) < 10 ** digits * 10:
        text = f"{x:.{max(digits - 1 - int(np.floor(np.log10(abs(x)))), 0)}f}"
    return text


def p_text(p: float) -> str:
    return f"p = {p:.2g}"


def times(a: float, b: float, digits: int = 2) -> str:
    """``a / b`` as "1.6x"."""
    return f"{num(a / b, digits)}x"


@dataclass(frozen=True)
class Paired:
    """``a`` against ``b`` over their common seeds: seeds each was lower on, pairs, Wilcoxon p."""
    wins_a: int
    wins_b: int
    pairs: int
    p: float
    median_diff: float

    @property
    def a_ahead(self) -> bool:
        return verdict(self.p, self.median_diff) == "ahead"

    @property
    def b_ahead(self) -> bool:
        return verdict(self.p, self.median_diff) == "behind"

    @property
    def word(self) -> str:
        """a's relation to b: "ahead of", "behind" or "level with"."""
        return "ahead of" if self.a_ahead else "behind" if self.b_ahead else "level with"

    def counts(self) -> str:
        return f"{self.wins_a} of {self.pairs} seeds, {p_text(self.p)}"


def paired(a: pd.Series, b: pd.Series) -> Paired:
    """Compare two per-seed series (index: seed; lower is better)."""
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna()
    diff = (both["a"] - both["b"]).to_numpy(float)
    return Paired(int((diff < 0).sum()), int((diff > 0).sum()), len(diff), signed_rank_p(diff),
                  float(np.median(diff)) if len(diff) else np.nan)


def relation(pair: Paired, a: str, b: str) -> str:
    """"a is ahead of b (lower on W of N seeds, p = ...)", "... behind ...", or "... level with ..."."""
    text = f"{a} is {pair.word} {b} (lower on {pair.counts()})"
    return text[0].upper() + text[1:]
