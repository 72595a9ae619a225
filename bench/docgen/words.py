"""Numbers and the words for comparisons, by one significance standard for every doc.

The standard is dmlcore's one verdict rule (dmlcore.studies.verdict.paired_verdict, its ``RULE``;
stated in docs/benchmarks.md, block ``standard``): two methods are compared on the seeds both were
fitted on (the same data per seed) by the two-sided Wilcoxon signed-rank test of their paired
differences. A method "beats" / "is ahead of" another, or the other "is behind", only when p < 0.05,
in the direction of the test's own statistic (the signed-rank sums, not the median difference);
otherwise the two are "level" and the doc names no winner (no "tendency"). Each comparison a doc
states is its own family (no Holm correction across a doc's sentences).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from dmlcore.studies.verdict import ALPHA, PairedVerdict, paired_verdict, signed_rank_p  # noqa: F401  (the one rule's)


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
class Paired(PairedVerdict):
    """``a`` against ``b`` over their common seeds, by dmlcore's one rule (:func:`paired_verdict`), with
    the words the docs use."""

    @property
    def word(self) -> str:
        """a's relation to b: "ahead of", "behind" or "level with"."""
        return "ahead of" if self.a_ahead else "behind" if self.b_ahead else "level with"

    @property
    def a_ahead(self) -> bool:
        return PairedVerdict.word.fget(self) == "ahead"

    @property
    def b_ahead(self) -> bool:
        return PairedVerdict.word.fget(self) == "behind"

    def counts(self) -> str:
        return f"{self.wins_a} of {self.pairs} seeds, {p_text(self.p)}"


def paired(a: pd.Series, b: pd.Series) -> Paired:
    """Compare two per-seed series (index: seed; lower is better) by the one rule."""
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna()
    result = paired_verdict((both["a"] - both["b"]).to_numpy(float))
    return Paired(**{f.name: getattr(result, f.name) for f in fields(PairedVerdict)})


def relation(pair: Paired, a: str, b: str) -> str:
    """"a is ahead of b (lower on W of N seeds, p = ...)", "... behind ...", or "... level with ..."."""
    text = f"{a} is {pair.word} {b} (lower on {pair.counts()})"
    return text[0].upper() + text[1:]
