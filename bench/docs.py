"""Render every table, figure and quoted figure of the docs from the raw rows in bench/results/.

    python bench/docs.py --write     # rewrite every generated block, figure, derived file and record
    python bench/docs.py --check     # exit 1, naming each block, figure or record that differs

A generated block is the text between ``<!-- BEGIN generated:ID -->`` and
``<!-- END generated:ID -->`` in README.md or a docs/**/*.md (a block may sit inside a sentence);
ID names a renderer registered in bench/docgen/ (``--list`` prints them). Only saved rows
are read (CSV, JSON, logs): no fit runs, and the check takes seconds. ``--check`` also fails when

* a figure outside a generated block (in the docs, README.md or a string of dashboard/learn/*.py)
  differs from its record in bench/docgen/recorded/figures/ (bench/docgen/recorded.py), or a verdict
  word (met, missed, ahead, behind, level, faster, covers, ...) outside a block of README.md or a doc
  differs from its record in bench/docgen/recorded/words/;
* an image under docs/img/ differs from its recorded hash, or its rows changed since it was drawn;
* a doc shows an image that is missing, or a box plot of docs/img/ that no rows produce; an image under
  docs/img/ is shown or linked by no doc;
* a rows file in bench/results/ is read by no block and not archived with a reason (bench/docgen/archive.py);
* a derived file (the Learn page's measured.csv) is stale.

``--write`` redraws the PNG box plots (Chromium, about a second each; ``--no-figures`` skips them and
keeps their records) and records the figures outside blocks and the images' hashes: after merging
branches that edited docs, ``python bench/docs.py --write`` and a look at ``git diff bench/docgen/recorded``.
``--docs`` and ``--results`` point at other copies (the tests edit a copy). docs/making.md says more.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # `python bench/docs.py`: run as `python -m bench.docs`
    ROOT = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    os.execve(sys.executable, [sys.executable, "-P", "-m", "bench.docs", *sys.argv[1:]], env)

import argparse  # noqa: E402
import re  # noqa: E402
from fnmatch import fnmatch  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from bench.docgen import BLOCKS, FIGURES, FILES, recorded  # noqa: E402  (importing it registers every block)
from bench.docgen.archive import ARCHIVED, READ_BY  # noqa: E402
from bench.docgen.registry import renderer  # noqa: E402
from bench.docgen.rows import RESULTS, Rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"<!-- BEGIN generated:(?P<id>\S+) -->(?P<body>.*?)<!-- END generated:(?P=id) -->", re.S)
MARKERS = (MARKER,)  # what bench/docgen/recorded.py blanks before recording the figures outside blocks
IMAGE = re.compile(r"!\[[^\]]*\]\((?P<path>[^)\s]+\.png)\)")
PNG_LINK = re.compile(r"\]\((?P<path>[^)\s]+\.png)\)")  # a picture shown, or linked to
SCREENSHOTS = ("img/teaching/", "img/study/", "img/results/",   # pictures of the dashboard, not of rows
               "img/linear-iv/")   # compiled LaTeX of a CLI table (bench/card_table_pdf.sh), not drawn from rows


def doc_files(root: Path) -> list[Path]:
    """README.md and docs/**/*.md under ``root`` (a checkout, or a copy of one)."""
    return [p for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))] if p.exists()]


def blocks(doc: str) -> list[re.Match]:
    """Every generated block of ``doc``, in order."""
    return list(MARKER.finditer(doc))


@dataclass
class Rendered:
    """Every block's text (or the error that kept it from rendering)."""
    text: dict
    errors: dict


def render_all(rows: Rows, names=None) -> Rendered:
    """Render ``names`` (default: every block the docs under the checkout show)."""
    names = names if names is not None else sorted({n for p in doc_files(ROOT) for n in block_ids(p.read_text())})
    text, errors = {}, {}
    for name in names:
        render = renderer(name)
        if render is None:
            continue
        try:
            text[name] = render(rows).strip("\n")
        except Exception as exc:  # one line per block: which rows are missing or wrong
            errors[name] = f"{type(exc).__name__}: {exc}"
    return Rendered(text, errors)


def seen_from(text: str, depth: int) -> str:
    """A rendering as a doc ``depth`` folders below docs/ shows it: its ``img/`` pictures (written
    relative to docs/, e.g. by the ``img:NAME`` blocks) with ``../`` before them (docs/archive/)."""
    return text.replace("](img/", f"]({'../' * depth}img/") if depth else text


def depth_of(path: Path, root: Path) -> int:
    """How many folders below ``root``/docs/ the doc ``path`` lies (0 for docs/*.md and README.md)."""
    docs = (root / "docs").resolve()
    path = path.resolve()
    return len(path.relative_to(docs).parts) - 1 if path.is_relative_to(docs) else 0


def fill(doc: str, rendered: Rendered, depth: int = 0) -> str:
    """``doc`` with every known block's body replaced by its rendering (a multi-line block keeps its
    own lines; a block inside a sentence stays inline); ``depth``: see :func:`seen_from`."""
    def replace(m: re.Match) -> str:
        name, body = m["id"], m["body"]
        if name not in rendered.text:
            return m[0]
        text = seen_from(rendered.text[name], depth)
        new = f"\n{text}\n" if body.startswith("\n") else text
        return f"<!-- BEGIN generated:{name} -->{new}<!-- END generated:{name} -->"
    return MARKER.sub(replace, doc)


def block_ids(doc: str) -> list[str]:
    return [m["id"] for m in blocks(doc)]


def check_doc(path: Path, doc: str, rendered: Rendered, root: Path = ROOT) -> list[str]:
    """What is wrong in one doc: blocks that differ from the rows, unknown or failing blocks, stray
    markers, missing images, box plots without rows."""
    problems = []
    for m in blocks(doc):
        name = m["id"]
        if renderer(name) is None:
            problems.append(f"{path.name}: unknown block {name!r} (bench/docs.py --list names them)")
        elif name in rendered.errors:
            problems.append(f"{path.name}: block {name}: {rendered.errors[name]}")
        elif m["body"].strip("\n") != seen_from(rendered.text[name], depth_of(path, root)):
            problems.append(f"{path.name}: block {name} differs from what the rows give")
    for stray in re.findall(r"<!-- (?:BEGIN|END) generated:\S+ -->", MARKER.sub("", doc)):
        problems.append(f"{path.name}: unmatched marker {stray}")
    for m in IMAGE.finditer(doc):
        image = (path.parent / m["path"]).resolve()
        if not image.exists():
            problems.append(f"{path.name}: image {m['path']} is missing")
        elif not any(folder in m["path"] for folder in SCREENSHOTS) and image.name not in FIGURES:
            problems.append(f"{path.name}: image {m['path']} has no rows behind it (no figure registered)")
        elif image.name in FIGURES and f"img:{image.name}" not in block_ids(doc):
            problems.append(f"{path.name}: image {m['path']} is shown outside its block img:{image.name}")
    return problems


def draw_figures(rows: Rows, folder: Path, names) -> list[str]:
    """Write the PNGs ``names`` into ``folder``; problems as lines."""
    from dmlcore.studies.report import write_pngs

    figures = {name: FIGURES[name].draw(FIGURES[name].fits(rows)) for name in names}
    if not figures:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    error = write_pngs(figures, folder)
    return [error] if error else []


def check_all(root: Path, rows: Rows, rendered: Rendered) -> list[str]:
    """Every problem of the docs under ``root``: blocks, images, derived files, unused renderers."""
    problems, used = [], set()
    for path in doc_files(root):
        doc = path.read_text()
        used.update(block_ids(doc))
        problems += check_doc(path, doc, rendered, root)
    for rel, render in FILES.items():
        path = root / rel
        if path.exists() and path.read_text() != render(rows):
            problems.append(f"{rel} is stale: `python bench/docs.py --write` derives it from the rows")
    problems += [f"block {name} is registered but shown in no doc" for name in sorted(set(BLOCKS) - used)]
    problems += recorded.check_literals(root, doc_files(root), MARKERS)
    problems += recorded.check_words(root, doc_files(root), MARKERS)
    problems += recorded.check_images(root, rows, FIGURES)
    problems += unshown_images(root)
    return problems + unused_rows(rows)


def unshown_images(root: Path) -> list[str]:
    """PNGs under docs/img/ that no doc shows or links to."""
    shown = {(path.parent / m["path"]).resolve() for path in doc_files(root) for m in PNG_LINK.finditer(path.read_text())}
    return [f"docs/img/{image.relative_to(root / 'docs' / 'img').as_posix()} is shown or linked by no doc: show it "
            "where it belongs, or delete it" for image in recorded.images(root) if image.resolve() not in shown]


def unused_rows(rows: Rows) -> list[str]:
    """Rows files that no block, figure or derived file read (call after rendering them all), unless
    bench/docgen/archive.py says why they are kept; and archive entries that match no file."""
    files = sorted(p.relative_to(rows.folder).as_posix() for p in rows.folder.rglob("*") if p.is_file())
    reasons = {**ARCHIVED, **READ_BY}
    problems = [f"bench/docgen/archive.py: {glob!r} matches no file in {rows.folder}"
                for glob in reasons if not any(fnmatch(name, glob) for name in files)]
    for name in files:
        if name not in rows.read and not any(fnmatch(name, glob) for glob in reasons):
            problems.append(f"bench/results/{name} is read by no block: show it in a doc, or archive it with "
                            "a reason in bench/docgen/archive.py")
    return problems


def write_all(root: Path, rows: Rows, rendered: Rendered, figures: bool = True) -> list[str]:
    """Rewrite every block of the docs under ``root``, the figures they show and the derived files."""
    problems, used = [], set()
    for path in doc_files(root):
        doc = path.read_text()
        used.update(block_ids(doc))
        new = fill(doc, rendered, depth_of(path, root))
        if new != doc:
            path.write_text(new)
            print(f"wrote {path}")
    drawn = []
    if figures:
        shown = {n.split(":", 1)[1] for n in used if n.startswith("img:") and n not in rendered.errors}
        drawn = draw_figures(rows, root / "docs" / "img", sorted(shown))
        problems += drawn
    for rel, render in FILES.items():
        path, text = root / rel, render(rows)
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    for path in recorded.write_literals(root, doc_files(root), MARKERS):
        print(f"recorded {path}")
    for path in recorded.write_words(root, doc_files(root), MARKERS):
        print(f"recorded {path}")
    if recorded.write_images(root, rows, FIGURES, redrawn=figures and not drawn):
        print(f"recorded {root / recorded.FOLDER / 'images.tsv'}")
    return problems


def run(root: Path, results: Path, write: bool, figures: bool = True) -> list[str]:
    """Check (or, with ``write``, first rewrite) every doc under ``root`` against the rows in ``results``."""
    rows = Rows(results)
    used = {name for path in doc_files(root) for name in block_ids(path.read_text())}
    rendered = render_all(rows, sorted(used))
    problems = write_all(root, rows, rendered, figures) if write else []
    return problems + check_all(root, rows, rendered)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="render every block, figure and derived file in place")
    mode.add_argument("--check", action="store_true", help="exit 1 naming each block that differs from the rows")
    mode.add_argument("--list", action="store_true", help="print the registered blocks")
    parser.add_argument("--docs", type=Path, default=ROOT,
                        help="the checkout (or a copy) whose README.md and docs/*.md are read (default: this one)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the rows (default: bench/results)")
    parser.add_argument("--no-figures", action="store_true", help="with --write: do not redraw the PNGs")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(sorted(BLOCKS)))
        return 0
    if not args.docs.is_dir():
        parser.error(f"--docs {args.docs}: not a folder; give a checkout holding README.md and docs/")
    problems = run(args.docs, args.results, args.write, figures=not args.no_figures)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s); the rows in {args.results} are the truth: "
              "fix the rows or run `python bench/docs.py --write`", file=sys.stderr)
        return 1
    print("every generated block matches the rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
