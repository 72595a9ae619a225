"""README.md: the worked command-line examples, as they printed (rows of ``python -m bench.cli_examples``)."""

from __future__ import annotations

import textwrap

from .registry import family


def _wrapped(command: str) -> str:
    """A long command on several lines, continued with backslashes."""
    lines = textwrap.wrap(command, 96, break_on_hyphens=False, break_long_words=False)
    return " \\\n    ".join(lines)


@family(r"cli:(?P<name>[\w-]+)")
def example(rows, name: str) -> str:
    found = rows.jsonl("cli-examples.jsonl").set_index("name")
    row = found.loc[name]
    if row["exit"] != 0:
        raise ValueError(f"cli example {name} exited {row['exit']}")
    setup = "".join(f"$ {command}\n" for command in row["setup"])
    said = ""
    if "seconds=" in row["output"]:      # a time the command printed: the load it ran under beside it
        before, after = row["load"]
        said = f"# run {row['date']}, {row['machine']}; 1-minute load {before:.1f} before, {after:.1f} after\n"
    return f"```\n{said}{setup}$ {_wrapped(row['command'])}\n{row['output'].rstrip()}\n```"
