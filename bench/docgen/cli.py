"""docs/cli.md: the command-line reference, rendered from the parser itself
(:func:`dmlcore.cli.build_parser`), so that a new or renamed option cannot be missing from it."""

from __future__ import annotations

import argparse

from .registry import block


def _cell(text) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(f"`{name}`" for name in action.option_strings)
    if action.nargs == 0:
        return names
    if action.choices is not None:
        return f"{names} {{{', '.join(f'`{c}`' for c in action.choices)}}}"
    return f"{names} `{action.metavar or action.dest.upper()}`"


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS) or action.required:
        return "required" if action.required and action.option_strings else ""
    return f"`{action.default}`"


def _options(parser: argparse.ArgumentParser) -> list[str]:
    lines = ["| option | default | what it does |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        lines.append(f"| {_flags(action)} | {_default(action)} | {_cell(action.help or '')} |")
    return lines


def _subcommands(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name), sub


@block("cli:reference")
def reference(rows) -> str:
    from dmlcore.cli import build_parser

    parser = build_parser()
    parts = [_cell(parser.description or ""), "", "```text", " ".join(parser.format_usage().split()), "```"]
    for name, summary, sub in _subcommands(parser):
        parts += ["", f"## `{parser.prog} {name}`", "", _cell(summary or sub.description or ""), ""]
        if sub.description and sub.description != summary:
            parts += [_cell(sub.description), ""]
        parts += _options(sub)
    return "\n".join(parts)
