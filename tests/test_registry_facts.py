"""Facts from the registry (issue 48, item 5): no module outside the two registries tests a method's or a
learner's name.

A *check* is code that branches on a name: a comparison or membership test against a literal method name
(``method == "dml-cmr"``, ``kind in ("liml", "fuller")``), a ``startswith``/``endswith`` with a method name or
its leading part (``"dml"``), a pandas query string doing the same (``"method == 'naive'"``), a learner name
compared with a learner (``learner == "nn"``), or a dict literal keyed by method names that restates what an
entry holds (its title, sentence name or colour; a flag per method). Ask the entry instead
(``dmlcore/estimators/_registry.py``: ``Method`` fields and properties such as ``linear_iv``, ``k_class``,
``cross_fits``, ``outcome_model``, ``noun``, ``f_model``; the role names ``PAPER_METHOD``, ``PLUG_IN_METHOD``,
``LINEAR_REFERENCE``) or the learner registry (``dmlcore/learners/registry.py``: ``is_network``,
``is_staged``). Names as plain data are no check: the methods a study or benchmark runs, ``fit_run(data,
"2sls")``, a table of published numbers per method, a bench table's row selection through
``bench.docgen.tables.is_method`` (which refuses a name the registry does not know).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd
import pytest

from bench.docgen.tables import is_learner, is_method
from dmlcore.errors import DMLCoreError
from dmlcore.estimators._registry import METHODS
from dmlcore.learners.registry import LEARNER_REGISTRY

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("dmlcore", "dashboard", "pages", "bench", "app.py")
HOMES = {"dmlcore/estimators/_registry.py", "dmlcore/learners/registry.py"}

BUILT_IN = {name: entry for name, entry in METHODS.items() if entry.plugin is None}
# "gmm": the linear GMM's old internal name beside the registry's "gmm-iv"
METHOD_NAMES = set(BUILT_IN) | {"gmm"}
LEARNER_NAMES = set(LEARNER_REGISTRY)
# words that other vocabularies use too (a PLIV score "naive", a design or basis "linear", f_model "nn"):
# a check only where the other side is about a method or a learner
AMBIGUOUS = {"naive", "regression", "linear", "nn", "rf", "gb"}
ABOUT_A_NAME = re.compile(r"method|learner|\barm\b|nuisance|sampler")
# a method's name or its leading parts at a hyphen ("dml", "ce-dml", "nmmr", "sieve")
PREFIXES = {"-".join(name.split("-")[:k]) for name in METHOD_NAMES for k in range(1, name.count("-") + 2)}
PREFIXES = {p for p in PREFIXES if len(p) >= 2 and p not in AMBIGUOUS}
QUERY = re.compile(r"\b(method|learner)\s*(==|!=|\bin\b|\bnot in\b)\s*[(\[]?[^)\]]*?['\"]([a-z0-9-]+)['\"]")


def _strings(node) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _named(words: list[str], other: str) -> list[str]:
    """The method or learner names among ``words`` compared with the expression ``other``."""
    return [w for w in words if (w in METHOD_NAMES | LEARNER_NAMES)
            and (w not in AMBIGUOUS or ABOUT_A_NAME.search(other))]


def _restates(key: str, value: ast.AST) -> bool:
    entry = BUILT_IN.get(key)
    if entry is None or not isinstance(value, ast.Constant):
        return False
    return isinstance(value.value, bool) or value.value in {entry.title, entry.noun, entry.colour}


def checks(source: str) -> list[tuple[int, str]]:
    """(line, code) of every name check in ``source`` (a module's text)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, sides, sides[1:]):
                if isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) and any(
                        _named(_strings(a), ast.unparse(b)) for a, b in ((left, right), (right, left))):
                    found.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith")):
            if any(s in PREFIXES for a in node.args for s in _strings(a)):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Dict):
            if any(isinstance(k, ast.Constant) and _restates(k.value, v) for k, v in zip(node.keys, node.values)):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(m.group(3) in METHOD_NAMES | LEARNER_NAMES for m in QUERY.finditer(node.value)):
                found.append((node.lineno, repr(node.value)))
    return sorted(set(found))


def _modules():
    for top in SCANNED:
        path = ROOT / top
        yield from [path] if path.is_file() else sorted(path.rglob("*.py"))


def test_no_name_checks_outside_the_registries():
    found = [f"{path.relative_to(ROOT).as_posix()}:{line}: {code[:120]}"
             for path in _modules() if path.relative_to(ROOT).as_posix() not in HOMES
             for line, code in checks(path.read_text(encoding="utf-8"))]
    assert not found, ("method or learner names tested outside the registries; ask the registry's entry "
                       "(a field, a property, a role name: tests/test_registry_facts.py's docstring):\n"
                       + "\n".join(found))


PLANTED = '''
if method == "dml-cmr": pass
if kind in ("liml", "fuller"): pass
if args.method != "2sls": pass
if name.startswith("dml"): pass
if run.learner == "nn": pass
part = frame[frame["method"] != "naive"]
rows = frame.query("n == 5 and method == 'sieve-2sls'")
TITLES = {"ce-dml-cmr": "CE-DML-CMR", "kiv": "x"}
COLOURS = {"dml-cmr": "#1f77b4"}
LINEAR = {"2sls": True}
'''

DATA = '''
METHODS_RUN = ("dml-cmr", "ce-dml-cmr", "naive")
run = fit_run(data, "2sls", settings)
PAPER = {"dml-cmr": 0.21, "naive": 0.27}
if score == "naive": pass
if design == "linear": pass
if f_model == "nn": pass
rows = frame.query("n == 2000")
'''


def test_the_scanner_finds_a_planted_check_and_passes_plain_data():
    lines = [line for line, _ in checks(PLANTED)]
    assert lines == list(range(2, 12)), checks(PLANTED)
    assert checks(DATA) == []


def test_a_bench_row_selection_names_registered_methods_only():
    """Row selections are data, but checked data: a renamed or mistyped name fails instead of selecting no rows."""
    column = pd.Series(["dml-cmr", "naive", "nn"])
    assert is_method(column, "naive").tolist() == [False, True, False]
    assert is_learner(column, "nn").tolist() == [False, False, True]
    with pytest.raises(DMLCoreError, match="'dml_cmr'"):
        is_method(column, "dml_cmr")
    with pytest.raises(ValueError, match="'mlp'"):
        is_learner(column, "mlp")
