"""Options and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from magdash.errors import MagdashError
from magdash.jsonio import to_jsonable


class ProgressBar:
    """A progress callback drawing a tqdm bar on stderr, made at the first call (a run refused
    before any work draws none); ``quiet`` draws nothing. Close it when the work ends."""

    def __init__(self, unit: str, description: str, *, quiet: bool = False):
        self.unit, self.description, self.quiet = unit, description, quiet
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=done, unit=self.unit, file=sys.stderr, desc=self.description)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def command_line_message(error: MagdashError) -> str:
    """The error's message as the command line says it: each parameter it names as ``name=``
    (:attr:`MagdashError.parameters`) written as its option, ``--name`` (a value after it follows
    the option: ``stimuli='paper'`` becomes ``--stimuli paper``; ``replace=True`` is the bare flag ``--replace``).

    Args:
        error: the library's error.
    """
    message = str(error)
    for name in getattr(error, "parameters", ()):
        flag = "--" + name.replace("_", "-")
        message = re.sub(
            rf"(?<![\w-]){re.escape(name)}=('[^']*'|\S*)",
            lambda found, flag=flag: flag if found.group(1) == "True" else f"{flag} {found.group(1).strip(chr(39))}".rstrip(),
            message,
        )
    return message


def add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        help="DuckDB store file (default: $MAGDASH_STORE or cache/magdash.duckdb)",
    )


def check_name(name: str | None, option: str, example: str) -> str | None:
    """A model or stimulus set name from the command line; a blank one is refused, not stored.

    Any other text is stored and listed exactly as given (every query is parameterised).
    """
    if name is not None and not name.strip():
        raise MagdashError(f"{option} {name!r} is blank: give a name, e.g. {option} {example}")
    return name


def check_seed(seed: int) -> int:
    """A bootstrap seed from the command line: NumPy's generators take only seeds >= 0."""
    if seed < 0:
        raise MagdashError(f"--seed must be 0 or more, got {seed}")
    return seed


def open_store(args: argparse.Namespace, *, create: bool = False):
    """The ``--store`` of a command. Only the commands that store what the user gives them
    (extract, import, sweep, phase --prompts, freq count and freq import) pass ``create``;
    every other one finds no store at a path with nothing there, says so, and creates nothing."""
    from magdash.store import Store

    return Store(args.store, create=create)


def open_store_if_any(args: argparse.Namespace):
    """The ``--store`` of a command that also works without one (the built-in frequency sources):
    None when nothing is stored at the path."""
    from magdash.errors import NoStoreError

    try:
        return open_store(args)
    except NoStoreError:
        return None


def warn(lines: Iterable[str | None]) -> None:
    """Warnings go to stderr, so ``--json`` output on stdout stays machine-readable."""
    for line in lines:
        if line:
            print(f"magdash: warning: {line}", file=sys.stderr)


def command_line_leave_out(carrier: int) -> str:
    """How the command line leaves carrier ``carrier`` out (:meth:`magdash.caveats.Caveat.line`).

    Args:
        carrier: the carrier's index.
    """
    return f"--exclude-carrier {carrier} leaves it out"


def flagged_layer_warnings(store, models: Sequence[str], stimuli: str) -> list[str | None]:
    """The Inf/NaN warning of each stored model on ``stimuli`` (None where nothing is flagged)."""
    from magdash.overflow import nonfinite_warning

    return [nonfinite_warning(model, store.nonfinite_counts(model, stimuli)) for model in models]


def outsized_vector_warnings(store, model: str, stimuli: str) -> list[str]:
    """One line per carrier holding vectors the store flagged as outsized (:meth:`Store.outlier_vectors`)."""
    from magdash.norm_outliers import outsized_warning

    flagged = store.outlier_vectors(model, stimuli)
    carriers = store.stimulus_set(stimuli).carriers if len(flagged) else ()
    return [
        f"{model}: carrier {carrier} ({carriers[carrier]!r}): " + outsized_warning(
            rows["magnitude"].tolist(), rows["layer"].tolist(), float(rows["ratio"].max()),
            f"analyze --exclude-carrier {carrier} leaves that carrier out")
        for carrier, rows in flagged.groupby("carrier")
    ]


def print_json(payload: Any) -> None:
    json.dump(to_jsonable(payload), sys.stdout, allow_nan=False, indent=2)
    sys.stdout.write("\n")


def write_report(path: str, document: str) -> None:
    """Write an HTML report (:func:`magdash.output_files.write_output`: never over a file that is
    not an earlier report); a path that cannot be written is the user's to fix, not a traceback."""
    from magdash.output_files import is_report, write_output

    write_output(path, lambda target: target.write_text(document, encoding="utf-8"), what="the report",
                 ours=is_report)
