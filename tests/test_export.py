"""The shared Markdown / LaTeX table export (dmlcore.export)."""

import shutil
import subprocess

import pandas as pd
import pytest

from dmlcore.export import Table, latex_escape


def _table():
    frame = pd.DataFrame({"2SLS": ["0.132 (0.055)", "3010"], "OLS": ["0.075 (0.004)", "3010"]},
                         index=["educ", "N"])
    return Table(frame, caption="Return to schooling", notes=["Robust standard errors in parentheses."],
                 index="")


def test_markdown_has_header_rows_and_notes():
    text = _table().to_markdown().splitlines()
    assert text[0] == "**Return to schooling**"
    assert text[2] == "|  | 2SLS | OLS |"
    assert text[3] == "|---|---|---|"
    assert text[4] == "| educ | 0.132 (0.055) | 0.075 (0.004) |"
    assert text[-1] == "*Robust standard errors in parentheses.*"


def test_latex_escapes_and_closes_its_environments():
    frame = pd.DataFrame({"p_value": ["5%"], "x&y": ["a_b"]})
    tex = Table(frame, caption="50% #1").to_latex(label="tab:x")
    assert r"\caption{50\% \#1}" in tex and r"\label{tab:x}" in tex
    assert r"p\_value & x\&y \\" in tex and r"5\% & a\_b \\" in tex
    assert tex.count(r"\begin{") == tex.count(r"\end{") == 2
    assert r"\begin{tabular}{lc}" in tex


def test_latex_notes_wrap_below_the_tabular_and_relations_are_math():
    tex = _table().to_latex()
    notes = tex[tex.index(r"\end{tabular}"):]
    assert "multicolumn" not in tex and r"Robust standard errors in parentheses.\par" in notes   # a paragraph: wraps
    assert latex_escape("p < 0.05, a > b, −1 ≤ 2") == r"p $<$ 0.05, a $>$ b, $-$1 $\leq$ 2"     # OT1: no ¡ or ¿


def test_escape_backslash_first():
    assert latex_escape("a\\b_c") == r"a\textbackslash{}b\_c"


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex here (TeX Live's latex-base)")
def test_a_wide_table_compiles_and_fits_the_page(tmp_path):
    """pdflatex on a table wider than the text: it compiles, the notes wrap, nothing overflows, no ¡ for <."""
    frame = pd.DataFrame({"Method": ["DML-CMR", "2SLS"], **{f"N = {n}: median [q1, q3]": ["0.413 [0.396, 0.414]"] * 2
                                                            for n in (500, 1000, 2000, 5000)}})
    notes = ["p: two-sided Wilcoxon signed-rank test, Holm-corrected; ahead only when p < 0.05, " * 3]
    (tmp_path / "table.tex").write_text(Table(frame, caption="Wide", notes=notes).to_latex(label="tab:x"))
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\\usepackage{booktabs}\\usepackage{graphicx}"
                                      "\\begin{document}\\input{table.tex}\\end{document}\n")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-2000:]
    assert "Overfull" not in log
