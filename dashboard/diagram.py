"""Causal diagrams of the three problems as Graphviz DOT text (drawn by st.graphviz_chart).

Nodes carry the role and the columns assigned to it, so the picture follows the role choices.
The hidden confounder U is dashed: it is never in the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

_STYLE = {
    "outcome": "#fdd0a2", "treatment": "#c6dbef", "instrument": "#c7e9c0", "treatment_proxy": "#c7e9c0",
    "outcome_proxy": "#dadaeb", "covariates": "#f0f0f0", "inputs": "#c6dbef", "conditioning": "#c7e9c0",
}
_TITLES = {"outcome": "Y outcome", "treatment": "A treatment", "instrument": "Z instrument",
           "treatment_proxy": "Z treatment proxy", "outcome_proxy": "W outcome proxy",
           "covariates": "X covariates", "inputs": "inputs of f", "conditioning": "C conditioning"}


def _columns(cols: Sequence[str] | str | None, limit: int = 4) -> str:
    if not cols:
        return "(not assigned)"
    cols = [cols] if isinstance(cols, str) else list(cols)
    shown = ", ".join(cols[:limit])
    return shown + (f" +{len(cols) - limit} more" if len(cols) > limit else "")


def _node(role: str, cols) -> str:
    label = f"{_TITLES[role]}\\n{_escape(_columns(cols))}"
    missing = not cols
    return (f'{role} [label="{label}", fillcolor="{"#ffffff" if missing else _STYLE[role]}", '
            f'style="filled{",dashed" if missing else ""}", color="{"#cc0000" if missing else "#555555"}"];')


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def causal_dot(problem: str, roles: Mapping[str, Sequence[str] | str | None]) -> str:
    """DOT text of the causal graph of ``problem`` ("iv", "pcl" or "cmr") with ``roles`` filled in."""
    head = ['digraph G {', 'rankdir=LR; bgcolor="transparent";',
            'node [shape=box, style=filled, fontname="Helvetica", fontsize=11, margin="0.15,0.07"];',
            'edge [color="#444444"];']
    r = {k: roles.get(k) for k in _TITLES}
    hidden = 'U [label="U hidden\\nconfounder", shape=ellipse, style=dashed, color="#888888", fontcolor="#666666"];'
    if problem == "iv":
        body = [_node("instrument", r["instrument"]), _node("treatment", r["treatment"]),
                _node("outcome", r["outcome"]), hidden,
                "instrument -> treatment;", 'treatment -> outcome [penwidth=2.2, label=" f"];',
                'U -> treatment [style=dashed, color="#888888"];', 'U -> outcome [style=dashed, color="#888888"];',
                "{rank=same; instrument;}"]
        if r["covariates"]:
            body += [_node("covariates", r["covariates"]), "covariates -> treatment;", "covariates -> outcome;"]
    elif problem == "pcl":
        body = [_node("treatment_proxy", r["treatment_proxy"]), _node("treatment", r["treatment"]),
                _node("outcome", r["outcome"]), _node("outcome_proxy", r["outcome_proxy"]), hidden,
                'U -> treatment_proxy [style=dashed, color="#888888"];',
                'U -> outcome_proxy [style=dashed, color="#888888"];',
                'U -> treatment [style=dashed, color="#888888"];', 'U -> outcome [style=dashed, color="#888888"];',
                "treatment_proxy -> treatment;", "outcome_proxy -> outcome;",
                'treatment -> outcome [penwidth=2.2, label=" effect"];']
        if r["covariates"]:
            body += [_node("covariates", r["covariates"]), "covariates -> treatment;", "covariates -> outcome;"]
    else:
        body = [_node("conditioning", r["conditioning"]), _node("inputs", r["inputs"]),
                _node("outcome", r["outcome"]),
                'conditioning -> inputs [label=" draws | C", style=dashed];',
                'inputs -> outcome [penwidth=2.2, label=" f"];',
                'note [shape=note, fillcolor="#ffffee", label="E[Y - f(inputs) | C] = 0"];']
    return "\n".join(head + body + ["}"])


def moment_text(problem: str) -> str:
    """The conditional moment restriction of ``problem``, in LaTeX."""
    return {
        "iv": r"\mathbb{E}[\,Y - f(A, X) \mid Z, X\,] = 0",
        "pcl": (r"\begin{gathered}\mathbb{E}[\,Y - h(A, W, X) \mid A, Z, X\,] = 0,\\"
                r"\mathbb{E}[Y \mid do(a)] = \mathbb{E}_{W,X}[h(a, W, X)]\end{gathered}"),
        "cmr": r"\mathbb{E}[\,Y - f(\text{inputs}) \mid C\,] = 0",
    }[problem]
