"""dmlcore's modules import each other in one direction: no import circle, none hidden in a function, and
none from a lower layer to a higher one (``LAYERS``, docs/architecture.md draws them).

The graph has an edge a -> b for every ``import b`` / ``from b import name`` in module a, at
module level or inside a function (a function-level import that closes a circle is still a
circle, only postponed). ``from package import module`` points at the module. A package's
``__init__`` importing its own modules is not a circle; a module importing its package's
``__init__`` back would be one.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "dmlcore"


def module_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """{dotted module name: file} of every module of ``package``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    """{module: the package's modules it imports} (see the module docstring)."""
    files = module_files(root, package)
    graph = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:                       # relative: from . / .. import
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[:len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base
                           for alias in node.names]
            for target in targets:
                while target and target not in files:  # "import a.b.c" of a non-module name: its module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


# dmlcore's layers, lowest first: a module imports from its own layer and the ones below it, never above.
LAYERS = [
    ("dmlcore.errors", "dmlcore.progress", "dmlcore.process", "dmlcore._version", "dmlcore.device",
     "dmlcore.formula", "dmlcore.executors", "dmlcore.plugins"),                     # infrastructure
    ("dmlcore.stats",),                     # pure statistics: covariance, clusters, fixed effects, resampling
    ("dmlcore.learners",),                  # the nuisances
    ("dmlcore.data",),                      # data, roles, simulators (their oracle nuisances are learners)
    ("dmlcore.estimators",),
    ("dmlcore.inference",),                 # statistics of fitted estimators: scores, first stage, linear IV sets
    ("dmlcore.runs",),                      # fit_run and its refits (effect, held-out residual, bootstrap)
    ("dmlcore.store", "dmlcore.export", "dmlcore.plots", "dmlcore.regression_table", "dmlcore.linear_cli"),
    ("dmlcore.studies", "dmlcore.jobs", "dmlcore.teaching"),
    ("dmlcore.cli", "dmlcore.__main__", "dmlcore"),                                  # the public faces
]


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the longest prefix naming ``module`` (None when no layer names it)."""
    found = [(len(prefix), i) for i, names in enumerate(LAYERS) for prefix in names
             if module == prefix or module.startswith(prefix + ".")]
    return max(found)[1] if found else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for every import of a module of a higher layer than the importer's."""
    return [f"{a} -> {b}" for a in sorted(graph) for b in sorted(graph[a]) if layer_of(b) > layer_of(a)]


def test_every_module_has_a_layer_and_imports_none_above_it():
    graph = import_graph()
    assert [m for m in graph if layer_of(m) is None] == []
    assert upward_imports(graph) == []


def test_the_layer_check_finds_an_import_that_runs_up():
    graph = {"dmlcore.stats.clusters": {"dmlcore.runs.fit"}, "dmlcore.runs.fit": {"dmlcore.stats.clusters"}}
    assert upward_imports(graph) == ["dmlcore.stats.clusters -> dmlcore.runs.fit"]


def test_no_import_circle_in_dmlcore():
    found = circles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def function_level_imports(root: Path = ROOT, package: str = PACKAGE) -> list[str]:
    """``module:line`` of every import of the package's own modules inside a function."""
    out = []
    for name, path in module_files(root, package).items():
        for func in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package):
                    out.append(f"{name}:{node.lineno}")
                elif isinstance(node, ast.Import) and any(a.name.startswith(package) for a in node.names):
                    out.append(f"{name}:{node.lineno}")
    return out


def test_no_import_of_dmlcore_hidden_in_a_function():
    late = function_level_imports()
    assert not late, "imports inside functions: " + ", ".join(late)


def test_the_check_finds_a_circle(tmp_path):
    """The check itself: two modules that import each other (one inside a function) are found."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import A\n")
    (pkg / "a.py").write_text("from pkg.b import B\nA = 1\n")
    (pkg / "b.py").write_text("def later():\n    from pkg.a import A\n    return A\nB = 2\n")
    (pkg / "c.py").write_text("from pkg import a\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.c"] == {"pkg.a"} and graph["pkg"] == {"pkg.a"}
    assert circles(graph) == [["pkg.a", "pkg.b"]]
    assert function_level_imports(tmp_path, "pkg") == ["pkg.b:2"]
