"""What the check records beside the generated blocks (bench/docgen/recorded/):

* ``figures/<file>.tsv``: every figure (a run of digits, "0.80", "3,010") that README.md, a doc or a
  string literal of the Learn page (dashboard/learn/*.py) shows *outside* a generated block, in order,
  with its line and a few words around it. Such a figure is a constant of a design (N, seeds, a
  strength, a date, a version), never a measured value; changing, adding or removing one fails
  ``--check`` until ``--write`` records it again, so every such change shows in the recorded file's diff.
* ``words/<file>.tsv``: the same for every verdict word (met, missed, ahead, behind, level, faster,
  covers and their forms, the fractions half, third, quarter, twice, and the negations not and never) that README.md or a doc shows
  outside a generated block: a verdict measured from rows is written by a renderer inside a block (and
  ``--check`` compares it with the rows); one typed by hand fails ``--check`` when it is edited, until
  ``--write`` records it again, so the change shows in the record's diff.
* ``images.tsv``: the SHA-256 of every PNG under docs/img/ and, for a box plot drawn from rows, the
  SHA-256 of those rows; ``--check`` fails when an image differs from its record, when its rows
  changed since it was drawn, and when an image has no record.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import re
import tokenize
from pathlib import Path

FOLDER = Path("bench/docgen/recorded")
NUMBER = re.compile(r"(?<![A-Za-z_\d])\d+(?:[.,]\d+)*")
# verdict words, and the negations that flip one ("not met" -> "met" is an edited verdict too)
WORDS = re.compile(r"(?<![\w-])(?:met|meets?|miss(?:es|ed)?|ahead|behind|level|faster|slower|covers?|covered|"
                   r"halves|half|thirds?|quarters?|twice|not|never)(?![\w-])", re.I)
WRITE = "`python bench/docs.py --write`"
SHOWN = 6  # differences named per file (the rest counted)


def sources(root: Path, docs: list[Path]) -> list[Path]:
    """The files whose literal figures are recorded: the docs and the Learn page's modules."""
    return [*docs, *sorted((root / "dashboard" / "learn").glob("*.py"))]


def _record_path(root: Path, source: Path, kind: str = "figures") -> Path:
    return root / FOLDER / kind / (source.relative_to(root).as_posix().replace("/", "__") + ".tsv")


def _texts(source: Path, text: str, blocks: re.Pattern | list) -> list[tuple[int, str]]:
    """(first line, text) of what a reader sees outside generated blocks: the whole Markdown with every
    block blanked (its lines kept), or each string literal of a Python module."""
    if source.suffix == ".md":
        for pattern in blocks:
            text = pattern.sub(lambda m: "\n" * m[0].count("\n"), text)
        return [(1, text)]
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [(tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.STRING]


def literals(source: Path, text: str, blocks, pattern: re.Pattern = NUMBER) -> list[tuple[int, str, str]]:
    """(line, figure, context) of every figure (or, with ``pattern=WORDS``, verdict word) outside the
    generated blocks of ``source``."""
    found = []
    for first, part in _texts(source, text, blocks):
        for m in pattern.finditer(part):
            line = first + part.count("\n", 0, m.start())
            start, end = part.rfind("\n", 0, m.start()) + 1, part.find("\n", m.end())
            row = part[start:end if end >= 0 else len(part)]
            at = m.start() - start
            context = " ".join(row[max(0, at - 30):at + len(m[0]) + 20].split())
            found.append((line, m[0], context))
    return found


def _read(path: Path) -> list[tuple[int, str, str]]:
    lines = path.read_text().splitlines()[1:]
    return [(int(a), b, c) for a, b, c in (line.split("\t", 2) for line in lines)]


def _write(path: Path, found) -> bool:
    text = "line\tfigure\tcontext\n" + "".join(f"{a}\t{b}\t{c.replace(chr(9), ' ')}\n" for a, b, c in found)
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def check_literals(root: Path, docs: list[Path], blocks) -> list[str]:
    """Each figure outside a generated block that differs from the record, as a line."""
    problems, expected = [], set()
    for source in sources(root, docs):
        rel, record = source.relative_to(root).as_posix(), _record_path(root, source)
        expected.add(record)
        now = literals(source, source.read_text(), blocks)
        if not record.exists():
            problems.append(f"{rel}: its {len(now)} figures outside generated blocks are not recorded; {WRITE} records them")
            continue
        problems += _differences(rel, _read(record), now)
    folder = root / FOLDER / "figures"
    for stale in sorted(set(folder.glob("*.tsv")) - expected) if folder.is_dir() else []:
        problems.append(f"{stale.relative_to(root).as_posix()} records a file that is gone; {WRITE} removes it")
    return problems


def check_words(root: Path, docs: list[Path], blocks) -> list[str]:
    """Each verdict word outside a generated block of README.md or a doc that differs from the record."""
    problems, expected = [], set()
    for source in docs:
        rel, record = source.relative_to(root).as_posix(), _record_path(root, source, "words")
        expected.add(record)
        now = literals(source, source.read_text(), blocks, WORDS)
        if not record.exists():
            problems.append(f"{rel}: its {len(now)} verdict words outside generated blocks are not recorded; "
                            f"{WRITE} records them")
            continue
        problems += _differences(rel, _read(record), now, WORD_NOTE)
    folder = root / FOLDER / "words"
    for stale in sorted(set(folder.glob("*.tsv")) - expected) if folder.is_dir() else []:
        problems.append(f"{stale.relative_to(root).as_posix()} records a file that is gone; {WRITE} removes it")
    return problems


def write_words(root: Path, docs: list[Path], blocks) -> list[Path]:
    """Record the verdict words of README.md and every doc outside their blocks; the paths written."""
    written, keep = [], set()
    for source in docs:
        record = _record_path(root, source, "words")
        keep.add(record)
        if _write(record, literals(source, source.read_text(), blocks, WORDS)):
            written.append(record)
    folder = root / FOLDER / "words"
    for stale in set(folder.glob("*.tsv")) - keep if folder.is_dir() else ():
        stale.unlink()
        written.append(stale)
    return written


FIGURE_NOTE = ("{rel}: a figure outside a generated block changed: a measured one belongs in a block "
               "(docs/making.md); a design's constant is re-recorded by " + WRITE)
WORD_NOTE = ("{rel}: a verdict word outside a generated block changed: a verdict measured from rows belongs in "
             "a block whose renderer chooses it (bench/docgen/words.py, docs/making.md); wording that is no "
             "measurement is re-recorded by " + WRITE)


def _differences(rel: str, old, new, note: str = FIGURE_NOTE) -> list[str]:
    label = "word" if note is WORD_NOTE else "figure"
    lines = []
    matcher = difflib.SequenceMatcher(None, [f for _, f, _ in old], [f for _, f, _ in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        was = ", ".join(f"{f} ('{c}', line {n})" for n, f, c in old[i1:i2]) or "nothing"
        for n, f, c in new[j1:j2] or [(old[i1][0], "", "")]:
            now = f"{label} {f} in '{c}'" if f else f"a recorded {label} removed"
            lines.append(f"{rel}:{n}: {now}, recorded: {was}")
            was = "(same change)"
    if not lines:
        return []
    more = [f"{rel}: ... and {len(lines) - SHOWN} more changed figures"] if len(lines) > SHOWN else []
    return [note.format(rel=rel), *lines[:SHOWN], *more]


def write_literals(root: Path, docs: list[Path], blocks) -> list[str]:
    """Record the figures of every source; the paths written."""
    written, keep = [], set()
    for source in sources(root, docs):
        record = _record_path(root, source)
        keep.add(record)
        if _write(record, literals(source, source.read_text(), blocks)):
            written.append(record)
    folder = root / FOLDER / "figures"
    for stale in set(folder.glob("*.tsv")) - keep:
        stale.unlink()
        written.append(stale)
    return written


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def images(root: Path) -> list[Path]:
    return sorted((root / "docs" / "img").rglob("*.png"))


def _rows_hash(rows, figures, name: str) -> str:
    if name not in figures:
        return "-"
    return sha256(figures[name].fits(rows).to_csv(index=False).encode())


def check_images(root: Path, rows, figures) -> list[str]:
    """Images that differ from their record (content, or the rows they were drawn from)."""
    record = root / FOLDER / "images.tsv"
    known = {}
    if record.exists():
        known = {a: (b, c) for a, b, c in (line.split("\t") for line in record.read_text().splitlines()[1:])}
    problems = []
    base = root / "docs" / "img"
    present = set()
    for image in images(root):
        rel = image.relative_to(base).as_posix()
        present.add(rel)
        if rel not in known:
            problems.append(f"docs/img/{rel} has no recorded hash; {WRITE} records it")
            continue
        digest, drawn_from = known[rel]
        if sha256(image.read_bytes()) != digest:
            problems.append(f"docs/img/{rel} differs from its recorded hash: redraw it ({WRITE}, or its "
                            "generator: scripts/teaching_screenshots.py for screenshots) instead of editing it")
        elif drawn_from != "-" and drawn_from != _rows_hash(rows, figures, image.name):
            problems.append(f"docs/img/{rel} was drawn from other rows than bench/results holds now; {WRITE} redraws it")
    problems += [f"docs/img/{rel} is recorded but missing" for rel in sorted(set(known) - present)]
    return problems


def write_images(root: Path, rows, figures, redrawn: bool) -> bool:
    """Record every image's hash; a box plot's rows are recorded only when ``redrawn`` (else kept)."""
    record = root / FOLDER / "images.tsv"
    old = {}
    if record.exists():
        old = {a: (b, c) for a, b, c in (line.split("\t") for line in record.read_text().splitlines()[1:])}
    base, lines = root / "docs" / "img", ["image\tsha256\trows_sha256"]
    for image in images(root):
        rel = image.relative_to(base).as_posix()
        if image.name not in figures:     # a screenshot: no rows behind it
            drawn_from = "-"
        else:
            drawn_from = _rows_hash(rows, figures, image.name) if redrawn else old.get(rel, ("", "?"))[1]
        lines.append(f"{rel}\t{sha256(image.read_bytes())}\t{drawn_from}")
    return _write_text(record, "\n".join(lines) + "\n")


def _write_text(path: Path, text: str) -> bool:
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True
