"""MkDocs hooks of the documentation site (mkdocs.yml, ``bash scripts/docs.sh``).

* The generated blocks' markers (bench/docs.py) are dropped: a marker that starts a line would
  otherwise open an HTML block and break the paragraph or list around it.
* A page with several top-level headings (docs/teaching.md's sessions, docs/coverage.md's parts)
  has every heading after its title moved one level down, so that the table of contents shows them.
* A link to a file outside docs/ (rows in bench/results, scripts, tests) becomes its text: the site
  holds docs/ only, and such a path is meant to be read in a checkout.
* A Sphinx cross-reference role in a docstring (``:mod:`dmlcore.x```, ``:class:`~dmlcore.x.Y```) is
  rendered by mkdocstrings as the role's name before a code span; the role is dropped and the code span
  kept (``~`` keeps the last dotted name, as Sphinx shows it).
"""

from __future__ import annotations

import re
from pathlib import Path

LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]+)\]\((?P<target>[^)\s]+)\)")
EXTERNAL = re.compile(r"[a-z][a-z0-9+.-]*:|#")
MARKERS = re.compile(r"<!-- (?:BEGIN|END) generated:\S+ -->")
ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|attr|data|obj|exc|const):<code>(?P<tilde>~?)(?P<name>[^<]+)</code>")


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = MARKERS.sub("", markdown)
    docs = Path(config["docs_dir"]).resolve()
    here = (docs / page.file.src_uri).parent

    def link_or_text(m: re.Match) -> str:
        target = m["target"]
        if EXTERNAL.match(target):
            return m[0]
        path = (here / target.split("#", 1)[0]).resolve()
        return m[0] if path.is_relative_to(docs) and path.exists() else m["text"]

    return _one_title(LINK.sub(link_or_text, markdown))


def on_page_content(html: str, page, config, files) -> str:
    """Sphinx roles left in the rendered docstrings become plain code spans."""
    def code(m: re.Match) -> str:
        name = m["name"].rsplit(".", 1)[-1] if m["tilde"] else m["name"]
        return f"<code>{name}</code>"
    return ROLE.sub(code, html)


def _one_title(markdown: str) -> str:
    """Headings after the first level-1 heading one level down, when there are several level-1 ones."""
    lines, fenced, titles = markdown.split("\n"), False, []
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("# "):
            titles.append(i)
    if len(titles) < 2:
        return markdown
    fenced = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and i > titles[0] and re.match(r"#{1,5} ", line):
            lines[i] = "#" + line
    return "\n".join(lines)
