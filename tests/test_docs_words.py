"""Verdict words (met / missed / ahead / behind / level / faster / covers) and digits in the docs' prose
cannot be edited by hand unseen: inside a generated sentence the check compares them with the rows, outside
every block they are recorded (bench/docgen/recorded/words/, .../figures/) and the check names an edit."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bench import docs
from bench.docgen import recorded
from bench.docgen.rows import Rows

ROOT = Path(__file__).resolve().parents[1]
SWAP = {"ahead": "behind", "behind": "ahead", "level": "ahead", "met": "missed", "missed": "met",
        "faster": "slower", "covers": "misses", "half": "third", "third": "half", "miss": "meet", "meet": "miss"}


@pytest.fixture(scope="module")
def rendered():
    """The generated sentences' blocks only (rendering every block of the docs takes seconds more)."""
    return docs.render_all(Rows(), sorted({m["id"] for _, m, _ in _generated_sentences()}))


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "README.md", copy / "README.md")
    shutil.copytree(ROOT / recorded.FOLDER, copy / recorded.FOLDER)
    return copy


def _generated_sentences():
    """(path, block match, word match) of verdict words inside generated blocks that are sentences (not
    tables), one per block, across the docs."""
    found = []
    for path in docs.doc_files(ROOT):
        if "archive" in path.parts:          # the current pages' sentences
            continue
        for m in docs.blocks(path.read_text()):
            if "|" in m["body"]:
                continue
            word = re.search(r"\b(ahead|behind|level|met|missed)\b", m["body"])
            if word:
                found.append((path, m, word))
    return found


def test_three_verdict_words_edited_inside_generated_sentences_are_caught(rendered):
    found = _generated_sentences()
    picked = {}
    for path, m, word in found:                      # a different word each time, where the docs have it
        picked.setdefault(word[1], (path, m, word))
    assert len(picked) >= 3, sorted(picked)
    for path, m, word in list(picked.values())[:3]:
        block, start = m[0], m.start("body") - m.start() + word.start()    # the block as it stands in the doc
        assert docs.check_doc(path, block, rendered) == []
        edited = block[:start] + SWAP[word[1]] + block[start + len(word[1]):]
        assert f"block {m['id']} differs from what the rows give" in "\n".join(docs.check_doc(path, edited, rendered))


def test_three_verdict_words_edited_outside_blocks_are_caught(tmp_path):
    """A hand-typed "ahead", "met" or "half" outside every block, changed: the check names file and line."""
    copy = _copy(tmp_path)
    assert recorded.check_words(copy, docs.doc_files(copy), docs.MARKERS) == []
    edits = []
    for rel in ("docs/benchmarks.md", "docs/error-budget.md", "docs/coverage.md"):
        path = copy / rel
        words = recorded.literals(path, path.read_text(), docs.MARKERS, recorded.WORDS)
        line, word, _ = next(w for w in words if w[1].lower() in SWAP)
        lines = path.read_text().split("\n")
        lines[line - 1] = re.sub(rf"(?<![\w-]){word}(?![\w-])", SWAP[word.lower()], lines[line - 1], count=1)
        path.write_text("\n".join(lines))
        edits.append((rel, line, SWAP[word.lower()]))
    problems = "\n".join(recorded.check_words(copy, docs.doc_files(copy), docs.MARKERS))
    for rel, line, new in edits:
        assert f"{rel}: a verdict word outside a generated block changed" in problems
        assert f"{rel}:{line}: word {new} in" in problems, (rel, line, problems)
    recorded.write_words(copy, docs.doc_files(copy), docs.MARKERS)      # --write records the new wording
    assert recorded.check_words(copy, docs.doc_files(copy), docs.MARKERS) == []


def test_a_verdict_flipped_by_deleting_its_not_is_caught(tmp_path):
    """ "not met" edited to "met" outside every block (coverage.md's demand-pcl bullet, say): the check names it."""
    copy = _copy(tmp_path)
    path = copy / "docs" / "coverage.md"
    text = path.read_text()
    assert "not met" in text
    path.write_text(text.replace("not met", "met", 1))
    problems = "\n".join(recorded.check_words(copy, docs.doc_files(copy), docs.MARKERS))
    assert "docs/coverage.md: a verdict word outside a generated block changed" in problems
    assert "a recorded word removed, recorded: not" in problems, problems


def test_three_digits_edited_in_prose_are_caught(tmp_path, rendered):
    """A digit inside a generated sentence (results-today's relation, error-budget's targets) and one in
    running text outside every block, changed by one."""
    caught = 0
    for path, m, _ in _generated_sentences()[:2]:
        digit = re.search(r"\d", m["body"])
        block, start = m[0], m.start("body") - m.start() + digit.start()
        edited = block[:start] + str((int(digit[0]) + 1) % 10) + block[start + 1:]
        assert f"block {m['id']} differs" in "\n".join(docs.check_doc(path, edited, rendered))
        caught += 1
    copy = _copy(tmp_path)
    page = copy / "docs" / "results-today.md"
    line, figure, _ = recorded.literals(page, page.read_text(), docs.MARKERS)[0]
    lines = page.read_text().split("\n")
    lines[line - 1] = lines[line - 1].replace(figure, str(int(figure.replace(",", "").split(".")[0]) + 1), 1)
    page.write_text("\n".join(lines))
    problems = "\n".join(recorded.check_literals(copy, docs.doc_files(copy), docs.MARKERS))
    assert f"docs/results-today.md:{line}: figure" in problems
    caught += 1
    assert caught == 3


def test_a_bound_is_met_or_missed_by_the_rows():
    """The block that says whether today's DML-CMR meets a bound renders the word from the rows: a bound
    below the median reads "missed", one above it "met"."""
    from bench.docgen.registry import renderer

    rows = Rows()
    text = renderer("bound:demand-iv-nn-5000-pilot:dml-cmr:med:0.05")(rows)
    median = float(text.split(":")[0])
    assert renderer(f"bound:demand-iv-nn-5000-pilot:dml-cmr:med:{median * 2:.4f}")(rows).split(": ")[1].startswith("met")
    assert renderer(f"bound:demand-iv-nn-5000-pilot:dml-cmr:med:{median / 2:.4f}")(rows).split(": ")[1].startswith("missed")
