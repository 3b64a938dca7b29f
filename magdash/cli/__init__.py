"""Command-line interface: argparse subcommands over the same functions as the Python API.

Each subcommand lives in its own module exposing ``register(subparsers)``. User mistakes
(:class:`~magdash.errors.MagdashError`) become a one-line message on stderr and exit status 2,
never a traceback.
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from magdash import __version__
from magdash.errors import MagdashError
from magdash.kind_declarations import KIND_DECLARATIONS

SUBCOMMAND_MODULES = ("extract", "listing", "transfer", "compact", "backfill", *KIND_DECLARATIONS.cli_modules(), "sweep")
"""The modules under :mod:`magdash.cli` (without their ``_command`` suffix) registering the commands:
the analysis kinds' from their declarations (:data:`magdash.kind_declarations.KIND_DECLARATIONS`)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="magdash",
        description="Measure the geometry and noise of number representations in language models.",
    )
    parser.add_argument("--version", action="version", version=f"magdash {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in SUBCOMMAND_MODULES:
        importlib.import_module(f"magdash.cli.{module_name}_command").register(subparsers)
    for command in subparsers.choices.values():
        # a failing command's message names its own options (:func:`~magdash.cli.common.command_line_message`)
        command.set_defaults(command_parser=command)
    return parser


def degrade_unencodable_output() -> None:
    """Let what a terminal cannot encode come out as backslash escapes (``\\u2014`` for "—")
    instead of crashing the command, once its work is done, on a terminal that is not UTF-8
    (``PYTHONIOENCODING=ascii``, a latin-1 locale). A UTF-8 stream is left as it is."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        encoding = getattr(stream, "encoding", None)
        if reconfigure is None or not isinstance(encoding, str) or getattr(stream, "errors", "strict") != "strict":
            continue
        try:
            is_utf = codecs.lookup(encoding).name.startswith("utf")
        except LookupError:
            is_utf = False
        if not is_utf:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    degrade_unencodable_output()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except MagdashError as error:
        from magdash.cli.common import command_line_message

        print(f"magdash: error: {command_line_message(error, getattr(args, 'command_parser', None))}",
              file=sys.stderr)
        return 2
    except MemoryError:
        print(
            "magdash: error: out of memory; everything already stored is kept. Free memory, or lower "
            "--batch-size (extract) or --n-boot (analyses), and run again",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError:
        # The reader (``| head``) left early; say nothing more to a closed pipe.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces the closed stream for good
        return 0
    except KeyboardInterrupt:
        print("magdash: interrupted; what was stored so far is kept", file=sys.stderr)
        return 130
