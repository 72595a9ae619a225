"""The documentation site: its hooks (bench/docgen/site.py), the generated CLI reference, and a
strict MkDocs build from the checkout (skipped where requirements-docs.txt is not installed)."""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.docgen import cli
from dmlcore.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def _hooks():
    spec = importlib.util.spec_from_file_location("site_hooks", ROOT / "bench" / "docgen" / "site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _page(src_uri: str):
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri))


def test_the_home_page_is_a_short_introduction_with_the_readme_commands():
    """The site's Home is docs/index.md (not the README's option tables): the README's two promised
    commands, a link to the results on today's defaults first, and no option table."""
    home = (ROOT / "docs" / "index.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for command in ("bash scripts/run.sh", "bash scripts/test.sh"):
        assert f"    {command}\n" in home and f"    {command}\n" in readme, command
    links = [line for line in home.splitlines() if line.startswith("- [")]
    assert links and links[0].startswith("- [Results today](results-today.md)")
    assert "| option |" not in home and len(home.splitlines()) < 80
    hooks = _hooks()
    assert hooks.on_page_markdown(home, _page("index.md"), {"docs_dir": str(ROOT / "docs")}, None) == home


def test_sphinx_roles_in_rendered_docstrings_become_code_spans():
    hooks = _hooks()
    html = ("see :mod:<code>dmlcore.learners.select</code> and :class:<code>~dmlcore.data.roles.CausalData</code>, "
            ":func:<code>fit_run</code>; <code>:not a role</code>")
    assert hooks.on_page_content(html, _page("api.md"), {}, None) == (
        "see <code>dmlcore.learners.select</code> and <code>CausalData</code>, <code>fit_run</code>; "
        "<code>:not a role</code>")


def test_markers_are_dropped_and_links_outside_docs_become_text():
    hooks = _hooks()
    source = ("- a\n  <!-- BEGIN generated:x -->0.5<!-- END generated:x --> of [rows](../bench/results/a.csv), "
              "[coverage](coverage.md#conclusions), [site](https://example.org), ![p](img/demand-iv-gb.png)\n"
              "<!-- BEGIN generated:y -->\n| a |\n<!-- END generated:y -->\n")
    text = hooks.on_page_markdown(source, _page("benchmarks.md"), {"docs_dir": str(ROOT / "docs")}, None)
    assert text == ("- a\n  0.5 of rows, [coverage](coverage.md#conclusions), [site](https://example.org), "
                    "![p](img/demand-iv-gb.png)\n\n| a |\n\n")


def test_the_cli_reference_lists_every_option_of_every_command():
    """Each option of each subcommand, with its default, is in docs/cli.md's block; a new option
    shows up there without anyone typing it."""
    text = cli.reference(None)
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) <= {line.split("`")[1].split()[-1] for line in text.splitlines() if line.startswith("## ")}
    for name, sub in commands.items():
        section = text.split(f"## `python -m dmlcore {name}`", 1)[1].split("\n## ", 1)[0]
        for action in sub._actions:
            if action.option_strings and action.help != argparse.SUPPRESS and "-h" not in action.option_strings:
                row = next((line for line in section.splitlines() if f"`{action.option_strings[0]}`" in line), None)
                assert row is not None, (name, action.option_strings)
                if action.default not in (None, False, argparse.SUPPRESS) and action.nargs != 0:
                    assert f"`{action.default}`" in row, (name, action.option_strings, action.default)


def test_the_site_builds_strictly_from_the_checkout(tmp_path):
    pytest.importorskip("mkdocs", reason="requirements-docs.txt not installed (bash scripts/docs.sh installs it)")
    pytest.importorskip("mkdocstrings")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    site = tmp_path / "site"
    index, api, cli_page = ((site / name).read_text() for name in ("index.html", "api.html", "cli.html"))
    assert "DML-CMR for IV regression" in index and 'href="results-today.html"' in index
    assert ":mod:" not in api and ":class:" not in api and ":func:" not in api
    assert "``" not in api, "reST double backticks printed literally (prose in a numpy type slot)"
    assert "outcome_learner" in api.split('id="dmlcore.DMLCMR"', 1)[1].split('id="dmlcore.CEDMLCMR"', 1)[0]
    assert "generated:" not in index and "generated:" not in (site / "benchmarks.html").read_text()
    assert 'id="dmlcore.CausalData"' in api and "Parameters" in api
    bases = re.findall(r'class="doc doc-class-bases">(.*?)</p>', api, re.S)
    assert bases and not [b for b in bases if re.search(r">_\w", b)], "a private base class on the API page"
    wrong = _defaults_unlike_the_signatures(api)
    assert not wrong, f"the API page's Default column differs from the signature: {wrong}"
    assert "--reps-crossfit" in cli_page
    assert (site / "archive" / "benchmarks-raw-noise-2026-11-26.html").exists()


def _cell(html_text: str) -> str:
    import html
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html_text))).strip()


def _same_default(shown: str, value) -> bool:
    """Whether the Default cell ``shown`` (its first item; words may follow) names the signature's ``value``."""
    if value is inspect.Parameter.empty:
        return shown == "required"
    first = re.split(r"[ ,](?![^(]*\))", shown, maxsplit=1)[0].strip("\"'")
    if isinstance(value, (bool, type(None), str, tuple)):
        return re.sub(r"\s", "", first) == (str(value) if not isinstance(value, tuple) else re.sub(r"\s", "", repr(value)))
    try:
        return float(first) == float(value)
    except (TypeError, ValueError):
        return False


def _defaults_unlike_the_signatures(api: str) -> list:
    """Every row of a public entry's Parameters table whose Default disagrees with ``inspect.signature``
    (griffe takes a default from the docstring: a combined row or a set of choices can misstate it)."""
    import dmlcore

    wrong = []
    entries = re.split(r'id="dmlcore\.(?=[A-Za-z_]+" class="doc doc-heading")', api)[1:]
    for entry in entries:
        name = entry.split('"', 1)[0]
        start = entry.find('doc-section-title">Parameters:')
        if start < 0 or not callable(getattr(dmlcore, name, None)):
            continue
        params = inspect.signature(getattr(dmlcore, name)).parameters
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", entry[start:entry.find("</table>", start)], re.S)[1:]:
            cells = [_cell(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            value = params[cells[0]].default if cells and cells[0] in params else None
            if len(cells) == 4 and cells[0] in params and not (isinstance(value, tuple) and len(value) > 5) \
                    and "factory" not in repr(value) and not _same_default(cells[3], value):
                wrong.append(f"{name}.{cells[0]}: page {cells[3]!r}, signature {value!r}")
    return wrong


def test_a_page_with_several_titles_keeps_one():
    hooks = _hooks()
    source = "# Title\n\n## a\n\n```\n# not a heading\n```\n\n# Part 2\n\n## b\n"
    text = hooks.on_page_markdown(source, _page("teaching.md"), {"docs_dir": str(ROOT / "docs")}, None)
    assert text == "# Title\n\n### a\n\n```\n# not a heading\n```\n\n## Part 2\n\n### b\n"
    assert hooks.on_page_markdown("# One\n\n## a\n", _page("x.md"), {"docs_dir": str(ROOT / "docs")}, None) == "# One\n\n## a\n"


def test_the_api_page_shows_every_public_name():
    """Every name `import dmlcore` exports has its entry on docs/api.md (rendered from its docstring)."""
    import dmlcore

    page = (ROOT / "docs" / "api.md").read_text()
    shown = {line.split("dmlcore.", 1)[1].strip() for line in page.splitlines() if line.startswith("::: dmlcore.")}
    missing = set(dmlcore.__all__) - shown - {"__version__", "METHODS"}
    assert not missing, f"docs/api.md lacks {sorted(missing)}"
