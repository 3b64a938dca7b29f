"""MkDocs hook: the command-line reference (``docs/cli.md``) generated from magdash's argparse
parsers at build time, so that it can never drift from ``python -m magdash --help``.

``docs/cli.md`` holds the prose; the marker ``<!-- cli-reference -->`` in it is replaced by one
section per command (its usage, then a table of its arguments with their help, defaults and
choices as ``--help`` prints them), subcommands (``freq corr``) nested under their command.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

MARKER = "<!-- cli-reference -->"
PAGE = "cli.md"
USAGE_WIDTH = 100


def on_config(config, **kwargs):
    """Put the repository root first on ``sys.path`` so the parsers are this checkout's."""
    root = str(Path(config.config_file_path).resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return config


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    """Fill the marker of ``docs/cli.md`` with the generated reference."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/{PAGE} lost its {MARKER} marker")
    return markdown.replace(MARKER, cli_reference_markdown())


def cli_reference_markdown() -> str:
    """Every command of ``python -m magdash`` as Markdown, in the order ``--help`` lists them."""
    from magdash.cli import build_parser

    parser = build_parser()
    lines = [*_usage(parser), "", *_arguments_table(parser), ""]
    for name, subparser, summary in _subcommands(parser):
        lines += _command(name, subparser, summary, level=2)
    return "\n".join(lines)


def _command(name: str, parser: argparse.ArgumentParser, summary: str | None, level: int) -> list[str]:
    lines = [f"{'#' * level} `magdash {name}`", ""]
    description = parser.description or summary
    if description:
        lines += [_escape(description), ""]
    lines += [*_usage(parser), ""]
    table = _arguments_table(parser)
    if table:
        lines += [*table, ""]
    for child, subparser, child_summary in _subcommands(parser):
        lines += _command(f"{name} {child}", subparser, child_summary, level=level + 1)
    return lines


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str | None]]:
    found = []
    for action in parser._actions:  # argparse keeps no public list of its actions
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help for choice in action._choices_actions}
            seen: set[int] = set()
            for name, subparser in action.choices.items():
                if id(subparser) not in seen:  # an alias maps to the same parser
                    seen.add(id(subparser))
                    found.append((name, subparser, summaries.get(name)))
    return found


def _usage(parser: argparse.ArgumentParser) -> list[str]:
    formatter = argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return ["```text", formatter.format_help().strip(), "```"]


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        rows.append(f"| {_invocation(action)} | {_escape(_expand_help(action, parser.prog))} |")
    if not rows:
        return []
    return ["| argument | meaning |", "|---|---|", *rows]


def _invocation(action: argparse.Action) -> str:
    """``--flag VALUE`` (or ``-v, --verbose``, or a positional's name) as code."""
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    value = ""
    if action.nargs != 0:
        if action.choices is not None and action.metavar is None:
            value = " {" + ",".join(str(choice) for choice in action.choices) + "}"
        else:
            value = f" {action.metavar or action.dest.upper()}"
    return ", ".join(f"`{flag}{value}`" for flag in action.option_strings)


def _expand_help(action: argparse.Action, prog: str) -> str:
    """The help as ``--help`` prints it (``%(default)s`` and the like filled in)."""
    if not action.help:
        return ""
    params = {key: value for key, value in vars(action).items() if value is not argparse.SUPPRESS}
    params["prog"] = prog
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(choice) for choice in params["choices"])
    return action.help % params


def _escape(text: str) -> str:
    """Plain text safe in a Markdown table cell: no HTML, emphasis, links or cell breaks."""
    text = html.escape(" ".join(text.split()), quote=False)
    return re.sub(r"([\\|*_\[\]`{}])", r"\\\1", text)
