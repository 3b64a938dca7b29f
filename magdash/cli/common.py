"""Options and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from magdash.errors import MagdashError, rewrite_parameters
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


def command_line_message(error: MagdashError, parser: argparse.ArgumentParser | None = None) -> str:
    """The error's message as the command line says it (:func:`command_line_text`), each parameter
    it lists (:attr:`MagdashError.parameters`) or any command option's written as that option.

    Args:
        error: the library's error.
        parser: the parser of the command that failed; None: the params classes' options only.
    """
    return command_line_text(str(error), parser, getattr(error, "parameters", ()))


def command_line_text(text: str, parser: argparse.ArgumentParser | None = None,
                      parameters: Iterable[str] = ()) -> str:
    """A library message as the command line says it: a parameter it names as ``name=value`` is
    written as the option that sets it (``exclude_carriers=(3,)`` becomes ``--exclude-carrier 3``,
    ``stimuli='paper'`` ``--stimuli paper``, ``trust_remote_code=True`` ``--trust-remote-code``).
    The options come from the params classes' fields (:func:`magdash.cli.options.parameter_actions`).

    Args:
        text: the message.
        parser: the parser of the command that says it; None: the params classes' options only.
        parameters: names the message uses as parameters though no option of the command sets them.
    """
    from magdash.cli.options import parameter_actions

    actions = parameter_actions(parser)
    return rewrite_parameters(text, set(actions) | set(parameters),
                              lambda name, value: _as_option(actions.get(name), name, value))


def _as_option(action: argparse.Action | None, name: str, value: str) -> str:
    flag = action.option_strings[-1] if action is not None else "--" + name.replace("_", "-")
    if isinstance(action, argparse._StoreConstAction) or value in ("True", "False"):
        return flag
    if value.startswith("("):
        items = [item.strip().strip("'\"") for item in value[1:-1].split(",") if item.strip()]
        if isinstance(action, argparse._AppendAction):
            return " ".join(f"{flag} {item}" for item in items)
        return f"{flag} {','.join(items)}"
    return f"{flag} {value.strip(chr(39) + chr(34))}".rstrip()


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


def open_store(args: argparse.Namespace, *, create: bool = False):
    """The ``--store`` of a command. Only the commands that store what the user gives them
    (extract, import, sweep, depth --prompts, freq count and freq import) pass ``create``;
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
    """Warnings go to stderr, so ``--json`` output on stdout stays machine-readable; a parameter a
    library warning names is written as its option (:func:`command_line_text`)."""
    for line in lines:
        if line:
            print(f"magdash: warning: {command_line_text(line)}", file=sys.stderr)


def command_line_leave_out(carrier: int) -> str:
    """How the command line leaves carrier ``carrier`` out (:meth:`magdash.caveats.Caveat.line`):
    the Python parameter's words, written as the option.

    Args:
        carrier: the carrier's index.
    """
    from magdash.caveats import python_leave_out

    return command_line_text(python_leave_out(carrier))


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
            f"analyze {command_line_leave_out(carrier)}")
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
