"""The docs' generated blocks match the rows in bench/results, and the check notices a single edit."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import docs
from bench.docgen.rows import Rows

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"\d+(?:\.\d+)?")


@pytest.fixture(scope="module")
def rows():
    return Rows()


@pytest.fixture(scope="module")
def rendered(rows):
    return docs.render_all(rows)


def test_check_passes_on_the_tree(rows, rendered):
    """What `python bench/docs.py --check` reports on this checkout: nothing."""
    assert docs.check_all(ROOT, rows, rendered) == []


def test_every_number_of_every_block_is_checked(rendered):
    """Editing any one number inside any generated block of any doc makes the check name that block."""
    edited = 0
    for path in docs.doc_files(ROOT):
        doc = path.read_text()
        for m in docs.MARKER.finditer(doc):
            block, body_start = m[0], m.start("body") - m.start()
            for number in NUMBER.finditer(m["body"]):
                start, end = body_start + number.start(), body_start + number.end()
                wrong = block[:start] + str(int(number[0].replace(".", "")) + 1) + block[end:]
                problems = docs.check_doc(path, wrong, rendered)
                assert f"block {m['id']} differs" in "\n".join(problems), (path.name, m["id"], number[0])
                edited += 1
    assert edited > 1000


def test_cli_check_fails_on_an_edited_copy(tmp_path, rows, rendered):
    """A copy of the docs with one median changed: `python bench/docs.py --check` (a script path, as CI
    runs it) exits 1 naming the block and nothing else; writing the blocks repairs it."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "README.md", copy / "README.md")
    page = copy / "docs" / "benchmarks.md"
    text = page.read_text()
    block = re.search(r"<!-- BEGIN generated:table:demand-iv-nn-5000 -->.*?<!-- END", text, re.S)
    median = re.search(r"\| DML-CMR \| 20 \| (\d\.\d+)", block[0])
    page.write_text(text.replace(median[0], median[0].replace(median[1], "0.0620"), 1))
    out = subprocess.run([sys.executable, "bench/docs.py", "--docs", str(copy), "--check"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "benchmarks.md: block table:demand-iv-nn-5000 differs" in out.stderr
    assert out.stderr.count("differs") == 1
    assert docs.write_all(copy, rows, rendered, figures=False) == []
    assert page.read_text() == text and docs.check_all(copy, rows, rendered) == []


def test_a_missing_image_and_an_unknown_block_are_named(rendered, tmp_path):
    doc = tmp_path / "docs" / "x.md"
    doc.parent.mkdir()
    problems = docs.check_doc(doc, "![a](img/nowhere.png)\n<!-- BEGIN generated:nosuch -->\n<!-- END generated:nosuch -->",
                              rendered)
    assert any("image img/nowhere.png is missing" in p for p in problems)
    assert any("unknown block 'nosuch'" in p for p in problems)
