"""Worksheets from the lesson plan: per session, the students' questions and the teacher's version with
the expected answers, both read from docs/teaching.md (one source).

    python -m dmlcore.teaching.worksheets [--plan docs/teaching.md] [--out docs/worksheets] [--pdf]

In the plan, a session is a ``# Session N · title`` heading, a step a ``## ... · title`` heading under
it, a question a paragraph that starts with ``*Ask:*`` (or ``*Ask (context):*``) and its answer the
paragraph after it that starts with ``*Expected answer:*``. Writes ``session-N-student.md`` and
``session-N-teacher.md`` (and, with ``--pdf``, the same as PDF, printed by headless Chromium). A
measured figure in a question or an answer stands in the plan in a generated block (bench/docs.py); the
worksheets copy the block with its markers, so the docs check renders and checks it there too.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ASK = re.compile(r"^\*Ask(?: \((?P<context>[^)]*)\))?:\*\s*")
ANSWER = re.compile(r"^\*Expected answer:\*\s*")
# the docs' generated-block markers (bench/docs.py), copied with the answers: kept in the Markdown (so that
# `python bench/docs.py --check` checks the figures between them), dropped from the printed page
GENERATED = re.compile(r"<!-- (?:BEGIN|END) generated:\S+ -->")
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


@dataclass
class Question:
    text: str
    answer: str = ""


@dataclass
class Step:
    title: str
    questions: list[Question] = field(default_factory=list)


@dataclass
class Session:
    number: int
    title: str
    steps: list[Step] = field(default_factory=list)


def _paragraphs(text: str) -> list[str]:
    """Blocks of text separated by blank lines, each joined into one line; headings stay alone."""
    out, current = [], []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            if current:
                out.append(" ".join(current))
                current = []
            if line.startswith("#"):
                out.append(line.strip())
            continue
        current.append(line.strip())
    if current:
        out.append(" ".join(current))
    return out


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def parse(text: str) -> list[Session]:
    """The sessions of a lesson plan (module docstring), each with its steps' questions and answers."""
    sessions: list[Session] = []
    for block in _paragraphs(text):
        session = re.match(r"^# Session (\d+) · (.+)$", block)
        if session:
            sessions.append(Session(int(session[1]), session[2].strip()))
            continue
        if block.startswith("# "):
            continue
        if not sessions:
            continue
        if block.startswith("## "):
            sessions[-1].steps.append(Step(block[3:].strip()))
            continue
        ask = ASK.match(block)
        if ask and sessions[-1].steps:
            context = f"({ask['context']}) " if ask["context"] else ""
            sessions[-1].steps[-1].questions.append(Question(context + _sentence(block[ask.end():].strip())))
        elif ANSWER.match(block) and sessions[-1].steps and sessions[-1].steps[-1].questions:
            sessions[-1].steps[-1].questions[-1].answer = _sentence(block[ANSWER.match(block).end():].strip())
    for session in sessions:
        session.steps = [step for step in session.steps if step.questions]
    return sessions


def render(session: Session, *, answers: bool) -> str:
    """One session's worksheet as Markdown: the questions, numbered, with room to answer (students)
    or with the expected answers (teacher)."""
    kind = "teacher's version, with the expected answers" if answers else "student worksheet"
    lines = [f"# Session {session.number} · {session.title}", "", f"*{kind.capitalize()}. From docs/teaching.md.*", ""]
    if not answers:
        lines += ["Name: ______________________    Seat / data seed: ______", ""]
    number = 0
    for step in session.steps:
        lines += [f"## {step.title}", ""]
        for q in step.questions:
            number += 1
            lines += [f"**{number}.** {q.text}", ""]
            if answers:
                lines += [f"> **Expected answer.** {q.answer or '(none written in the plan)'}", ""]
            else:
                lines += ["&nbsp;", "", "&nbsp;", "", "&nbsp;", ""]
    return "\n".join(lines).rstrip() + "\n"


def to_html(markdown: str) -> str:
    """The little Markdown :func:`render` writes (headings, paragraphs, bold, italics, quotes) as HTML."""
    def inline(text: str) -> str:
        text = html.escape(GENERATED.sub("", text), quote=False).replace("&amp;nbsp;", "&nbsp;")
        text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
        text = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", text)
        return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    body = []
    for block in _paragraphs(markdown):
        if block.startswith("## "):
            body.append(f"<h2>{inline(block[3:])}</h2>")
        elif block.startswith("# "):
            body.append(f"<h1>{inline(block[2:])}</h1>")
        elif block.startswith("> "):
            body.append(f"<blockquote>{inline(block[2:])}</blockquote>")
        else:
            body.append(f"<p>{inline(block)}</p>")
    style = ("body{font-family:sans-serif;font-size:11pt;line-height:1.4;margin:2cm}h1{font-size:18pt}"
             "h2{font-size:13pt;margin-top:1.2em}blockquote{border-left:3px solid #1f77b4;margin:0.3em 0;"
             "padding-left:0.8em;color:#333}")
    return f"<!doctype html><html><head><meta charset='utf-8'><style>{style}</style></head><body>{''.join(body)}</body></html>"


def print_pdf(markdown: str, path: Path) -> None:
    """Print ``markdown`` (as :func:`to_html` renders it) to a PDF with headless Chromium."""
    browser = next((c for c in CHROMIUM if Path(c).exists()), None) or shutil.which("chromium")
    if browser is None:
        raise FileNotFoundError("No Chromium found to print the PDF; leave out --pdf (the Markdown is written).")
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "sheet.html"
        page.write_text(to_html(markdown), encoding="utf-8")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                        f"--print-to-pdf={path}", page.as_uri()], check=True, capture_output=True, timeout=120)


def write(plan: Path, out: Path, pdf: bool = False) -> list[Path]:
    """Write every session's two worksheets into ``out``; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for session in parse(plan.read_text(encoding="utf-8")):
        for kind, answers in (("student", False), ("teacher", True)):
            text = render(session, answers=answers)
            path = out / f"session-{session.number}-{kind}.md"
            path.write_text(text, encoding="utf-8")
            written.append(path)
            if pdf:
                print_pdf(text, path.with_suffix(".pdf"))
                written.append(path.with_suffix(".pdf"))
    return written


def main(argv=None) -> int:
    root = Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=Path, default=root / "docs" / "teaching.md")
    parser.add_argument("--out", type=Path, default=root / "docs" / "worksheets")
    parser.add_argument("--pdf", action="store_true", help="also print each worksheet to PDF (headless Chromium)")
    args = parser.parse_args(argv)
    for path in write(args.plan, args.out, args.pdf):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
