"""The shared Markdown / LaTeX table export (dmlcore.export)."""

import pandas as pd

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


def test_latex_notes_wrap_in_a_paragraph_as_wide_as_the_text():
    """Notes sit below the tabular in a \\parbox{\\linewidth}, where they wrap (not in a \\multicolumn{..}{l}
    cell, which runs past the page)."""
    tex = _table().to_latex()
    assert r"\parbox{\linewidth}{\footnotesize\raggedright" in tex and "multicolumn" not in tex
    assert tex.index(r"\end{tabular}") < tex.index("Robust standard errors in parentheses.") < tex.index(r"\end{table}")


def test_escape_backslash_first():
    assert latex_escape("a\\b_c") == r"a\textbackslash{}b\_c"
