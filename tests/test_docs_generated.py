"""The docs' generated blocks match the rows in bench/results, and the check notices a single edit."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import docs
from bench.docgen import recorded
from bench.docgen.rows import Rows

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def checkout_copy(tmp_path: Path) -> Path:
    """What the check reads of a checkout, copied: README.md, docs/, the Learn page, the records."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "README.md", copy / "README.md")
    shutil.copytree(ROOT / "dashboard" / "learn", copy / "dashboard" / "learn")
    shutil.copytree(ROOT / recorded.FOLDER, copy / recorded.FOLDER)
    return copy


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
        for m in docs.blocks(doc):
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
    runs it) exits 1 naming the block and nothing else; writing the blocks repairs it. The page is in
    docs/archive/, whose box plots are shown as ../img/ (a block's img/ rebased by bench/docs.py)."""
    copy = checkout_copy(tmp_path)
    page = copy / "docs" / "archive" / "benchmarks-own-nuisances-2026-11-27.md"
    text = page.read_text()
    block = re.search(r"<!-- BEGIN generated:table:demand-iv-nn-5000 -->.*?<!-- END", text, re.S)
    median = re.search(r"\| DML-CMR \| 20 \| (\d\.\d+)", block[0])
    page.write_text(text.replace(median[0], median[0].replace(median[1], "0.0620"), 1))
    out = subprocess.run([sys.executable, "bench/docs.py", "--docs", str(copy), "--check"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "benchmarks-own-nuisances-2026-11-27.md: block table:demand-iv-nn-5000 differs" in out.stderr
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


@pytest.fixture()
def copy(tmp_path, rows, rendered):
    """A copy of the checkout that passes the check (so any problem below is the edit's)."""
    root = checkout_copy(tmp_path)
    assert docs.check_all(root, rows, rendered) == []
    return root


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1))


def test_an_edited_prose_figure_fails_the_check(copy, rows, rendered):
    """A decimal figure in running text of coverage.md, outside every block, edited: named with its line."""
    page = copy / "docs" / "coverage.md"
    found = recorded.literals(page, page.read_text(), docs.MARKERS)
    line, figure, _ = next(f for f in found if "." in f[1] and not f[2].lstrip().startswith(("|", "python")))
    lines = page.read_text().splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].replace(figure, figure + "9", 1)
    page.write_text("".join(lines))
    problems = "\n".join(docs.check_all(copy, rows, rendered))
    assert "docs/coverage.md: a figure outside a generated block changed" in problems
    assert f"docs/coverage.md:{line}: figure {figure}9 in" in problems and f"recorded: {figure} (" in problems


def test_an_edited_hand_typed_table_cell_fails_the_check(copy, rows, rendered):
    """A cell of a table typed by hand (outside every block; class.md's tables were such) edited:
    the check names the file and the line."""
    for page in [copy / "docs" / "class.md", *docs.doc_files(copy)]:
        text = page.read_text()
        blanked = recorded._texts(page, text, docs.MARKERS)[0][1].splitlines()
        hit = next(((i + 1, line) for i, line in enumerate(blanked)
                    if line.startswith("|") and not set(line) <= set("|-: ") and re.search(r"\d\.\d", line)), None)
        if hit:
            break
    number, line = hit
    cell = re.search(r"\d\.\d", line)
    lines = text.splitlines(keepends=True)
    digit = "8" if cell[0][0] == "7" else "7"
    lines[number - 1] = lines[number - 1][:cell.start()] + digit + lines[number - 1][cell.start() + 1:]
    page.write_text("".join(lines))
    rel = page.relative_to(copy).as_posix()
    problems = docs.check_all(copy, rows, rendered)
    assert any(p.startswith(f"{rel}:{number}: figure {digit}") for p in problems), problems


def test_an_edited_card_block_fails_the_check(copy, rows, rendered):
    """The Card answer key (docs/teaching.md's block teaching:card, from bench/results/teaching/card.json):
    a figure of its table edited fails the check, and --write puts it back."""
    page = copy / "docs" / "teaching.md"
    text = page.read_text()
    card = next(m for m in docs.blocks(text) if m["id"] == "teaching:card")
    figure = re.search(r"\| (\d+\.\d+) \|", card["body"])
    start = card.start("body") + figure.start(1)
    page.write_text(text[:start] + ("8" if text[start] == "9" else "9") + text[start + 1:])
    problems = docs.check_all(copy, rows, rendered)
    assert problems == ["teaching.md: block teaching:card differs from what the rows give"]
    assert docs.write_all(copy, rows, rendered, figures=False) == []
    assert page.read_text() == text


def test_an_edited_learn_page_string_fails_the_check(copy, rows, rendered):
    """A figure in a string the Learn page shows (dashboard/learn/*.py), edited."""
    module = copy / "dashboard" / "learn" / "card.py"
    found = recorded.literals(module, module.read_text(), docs.MARKERS)
    line, figure, context = next(f for f in found if "." in f[1])
    text = module.read_text().splitlines(keepends=True)
    text[line - 1] = text[line - 1].replace(figure, figure + "1", 1)
    module.write_text("".join(text))
    problems = "\n".join(docs.check_all(copy, rows, rendered))
    assert f"dashboard/learn/card.py:{line}: figure {figure}1 in" in problems


def test_an_edited_image_fails_the_check(copy, rows, rendered):
    """A box plot whose bytes changed, and a screenshot: each named; an unrecorded new image too."""
    for rel in ("demand-iv-gb.png", "teaching/11b_card.png"):
        image = copy / "docs" / "img" / rel
        data = bytearray(image.read_bytes())
        data[len(data) // 2] ^= 0xFF
        image.write_bytes(bytes(data))
    shutil.copy(copy / "docs" / "img" / "demand-iv-gb.png", copy / "docs" / "img" / "extra.png")
    problems = docs.check_all(copy, rows, rendered)
    assert sorted(p.split(" ")[0] for p in problems) == [
        "docs/img/demand-iv-gb.png", "docs/img/extra.png", "docs/img/extra.png", "docs/img/teaching/11b_card.png"], problems
    assert "differs from its recorded hash" in problems[0]
    assert "docs/img/extra.png is shown or linked by no doc: show it where it belongs, or delete it" in problems


def test_a_screenshot_no_doc_shows_fails_the_check(copy, rows, rendered):
    """Every file in docs/img/ is shown or linked by a doc: a screenshot whose only mention is removed is named."""
    page = copy / "docs" / "teaching.md"
    text = page.read_text()
    shown = "![Learn, Confounding: OLS and 2SLS over 200 data sets at each ρ](img/teaching/03_confounding.png)"
    assert text.count(shown) == 1
    page.write_text(text.replace(shown, ""))
    problems = docs.check_all(copy, rows, rendered)
    assert "docs/img/teaching/03_confounding.png is shown or linked by no doc: show it where it belongs, or delete it" \
        in problems


def test_a_box_plot_drawn_from_older_rows_fails_the_check(copy, rows, rendered):
    """The image's record holds the hash of the rows it was drawn from: other rows, a stale image."""
    record = copy / recorded.FOLDER / "images.tsv"
    lines = record.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("demand-iv-gb.png\t"))
    name, digest, _ = lines[i].split("\t")
    lines[i] = "\t".join([name, digest, "0" * 64])
    record.write_text("\n".join(lines) + "\n")
    assert docs.check_all(copy, rows, rendered) == [
        "docs/img/demand-iv-gb.png was drawn from other rows than bench/results holds now; "
        "`python bench/docs.py --write` redraws it"]


def test_the_recorded_hash_is_what_the_generator_draws(tmp_path, rows):
    """Redrawing a box plot from its rows gives the recorded image, byte for byte."""
    assert docs.draw_figures(rows, tmp_path, ["peers-demand-pcl.png"]) == []
    record = dict(line.split("\t")[:2] for line in (ROOT / recorded.FOLDER / "images.tsv").read_text().splitlines())
    assert recorded.sha256((tmp_path / "peers-demand-pcl.png").read_bytes()) == record["peers-demand-pcl.png"]


def test_write_records_the_changed_figures(copy, rows, rendered):
    """The lead's command after a merge: `--write` records the new figures, and the check passes again."""
    page = copy / "docs" / "gpu.md"
    page.write_text(page.read_text() + "\nA design constant: 17 seeds.\n")
    assert docs.check_all(copy, rows, rendered) != []
    assert docs.write_all(copy, rows, rendered, figures=False) == []
    assert docs.check_all(copy, rows, rendered) == []
    assert "\t17\tA design constant: 17 seeds." in (copy / recorded.FOLDER / "figures" / "docs__gpu.md.tsv").read_text()


def test_a_rows_file_no_block_reads_fails_the_check(tmp_path):
    """A rows file that no block reads and no archive entry explains is named; one that is read is not."""
    (tmp_path / "shown.csv").write_text("a\n1\n")
    (tmp_path / "forgotten.csv").write_text("a\n2\n")
    own = Rows(tmp_path)
    own.csv("shown.csv")
    problems = docs.unused_rows(own)
    assert [p for p in problems if "read by no block" in p] == [
        "bench/results/forgotten.csv is read by no block: show it in a doc, or archive it with a reason in "
        "bench/docgen/archive.py"]
    assert any("matches no file" in p for p in problems)  # the archive's entries for the real rows


def test_every_rows_file_is_read_or_archived(rows, rendered):
    """On the real rows: every file in bench/results is read by a block or archived with a reason."""
    assert docs.unused_rows(rows) == []


def test_a_new_screenshot_recorded_without_redrawing_passes(copy, rows, rendered):
    """`--write --no-figures` records a new screenshot (no rows behind it) so that the check passes."""
    shutil.copy(copy / "docs" / "img" / "teaching" / "01_home.png", copy / "docs" / "img" / "teaching" / "99_new.png")
    page = copy / "docs" / "teaching.md"
    page.write_text(page.read_text() + "\n![A new screenshot](img/teaching/99_new.png)\n")
    assert recorded.write_images(copy, rows, docs.FIGURES, redrawn=False)
    recorded.write_literals(copy, docs.doc_files(copy), docs.MARKERS)
    assert docs.check_all(copy, rows, rendered) == []


def test_a_box_plot_in_the_archive_is_shown_from_its_folder(rendered):
    """A page in docs/archive/ shows an img:NAME block as ../img/NAME (a picture it can find); the same
    block written as docs/*.md write it (img/NAME) is named as differing from the rows there."""
    page = ROOT / "docs" / "archive" / "benchmarks-own-nuisances-2026-11-27.md"
    name = "img:demand-iv-nn-5000.png"
    here = rendered.text[name]
    assert "](img/demand-iv-nn-5000.png)" in here
    block = "<!-- BEGIN generated:{0} -->\n{1}\n<!-- END generated:{0} -->"
    archived = here.replace("](img/", "](../img/")
    assert docs.check_doc(page, block.format(name, archived), rendered) == []
    assert f"block {name} differs" in "\n".join(docs.check_doc(page, block.format(name, here), rendered))
    assert docs.check_doc(ROOT / "docs" / "benchmarks.md", block.format(name, here), rendered) == []
