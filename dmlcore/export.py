"""Paper-ready tables: one implementation of the Markdown and LaTeX export that the regression tables
and the study summaries share.

A :class:`Table` is a frame of already-formatted cells (strings), a caption and notes (the standard
errors' kind, the test behind a p-value). ``to_markdown`` writes a GitHub-style pipe table with the
notes below it; ``to_latex`` writes a ``booktabs`` tabular inside a ``table`` float with the notes in
a paragraph below the tabular that wraps at the text width; a header "A: B" is set on two lines,
and a tabular wider than the text is scaled down to the text width, so that it compiles with the
``booktabs`` and ``graphicx`` packages and fits a page.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  # OT1 sets a bare < or > as ¡ or ¿; the minus sign and relations are not in pdflatex's default utf8 set
                  "<": "$<$", ">": "$>$", "−": "$-$", "≤": r"$\leq$", "≥": r"$\geq$", "×": r"$\times$",
                  "÷": r"$\div$"}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (for cells, captions and notes)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def _header(text) -> str:
    """A LaTeX header cell; "A: B" on two lines (a nested tabular needs no package)."""
    head, sep, tail = str(text).partition(": ")
    if not sep:
        return latex_escape(text)
    return r"\begin{tabular}[b]{@{}c@{}}" + latex_escape(head) + r" \\ " + latex_escape(tail) + r"\end{tabular}"


def _markdown_cell(text) -> str:
    return "" if text is None or (isinstance(text, float) and pd.isna(text)) else str(text).replace("|", r"\|")


def _markdown_note(text: str) -> str:
    """A note set in italics: its own asterisks (significance stars) escaped, so they print as stars."""
    return str(text).replace("*", r"\*")


@dataclass
class Table:
    """Formatted cells with a caption and notes; ``index`` names the first column when the frame's
    index carries the row labels (it is written as a column of its own)."""

    frame: pd.DataFrame
    caption: str = ""
    notes: list[str] = field(default_factory=list)
    index: str | None = None

    def _cells(self) -> tuple[list[str], list[list[str]]]:
        frame = self.frame.reset_index() if self.index is not None else self.frame
        header = [self.index if (self.index is not None and i == 0) else str(c) for i, c in enumerate(frame.columns)]
        rows = [[_markdown_cell(v) for v in row] for row in frame.itertuples(index=False)]
        return header, rows

    def to_markdown(self) -> str:
        """A pipe table; the caption in bold above it, each note as a line below it."""
        header, rows = self._cells()
        lines = [f"**{self.caption}**", ""] if self.caption else []
        lines.append("| " + " | ".join(_markdown_cell(h) for h in header) + " |")
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        if self.notes:
            lines.append("")
            lines += [f"*{_markdown_note(note)}*" if note else "" for note in self.notes]
        return "\n".join(lines) + "\n"

    def to_latex(self, label: str | None = None) -> str:
        """A ``booktabs`` table float (first column left-aligned, the rest centred)."""
        header, rows = self._cells()
        spec = "l" + "c" * (len(header) - 1)
        out = [r"\begin{table}[htbp]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}"]
        if self.caption:
            out.append(r"\caption{" + latex_escape(self.caption) + "}")
        if label:
            out.append(r"\label{" + label + "}")
        out += [r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",   # scaled down only when too wide
                r"\begin{tabular}{" + spec + "}", r"\toprule",
                " & ".join(_header(h) for h in header) + r" \\", r"\midrule"]
        out += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in rows]
        out += [r"\bottomrule", r"\end{tabular}}"]
        if self.notes:      # a paragraph, not a \multicolumn{l} row: notes wrap at the text width
            out += [r"\par\smallskip", r"{\footnotesize\raggedright"]
            out += [latex_escape(note) + r"\par" for note in self.notes]
            out.append("}")
        out.append(r"\end{table}")
        return "\n".join(out) + "\n"
