"""Command-line options generated from a params dataclass's fields, so that a default, a choice
list or a help text has one home: the field (:func:`magdash.params.option` in its metadata).

``add_params_options(parser, ExtractParams)`` adds one option per field that carries an
:class:`~magdash.params.Option`; ``params_from_args(ExtractParams, args)`` builds the params from
what was given, leaving every option not given at the field's default. An option's text is read
by the field's ``parse`` when the params are built (inside the command, so that a bad value gets
magdash's one-line message, not argparse's usage dump).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from typing import Any

from magdash.errors import AnalysisError
from magdash.params import OPTION_KEY, Option


def _options(cls: type, skip: Iterable[str] = ()) -> list[tuple[dataclasses.Field, Option]]:
    skipped = set(skip)
    return [(f, f.metadata[OPTION_KEY]) for f in dataclasses.fields(cls)
            if OPTION_KEY in f.metadata and f.name not in skipped]


def _default_text(field: dataclasses.Field, choice: Option) -> str:
    if choice.default_text is not None:
        return choice.default_text
    default = field.default
    if isinstance(default, tuple):
        return ",".join(str(v) for v in default) or "none"
    return "none" if default is None else str(default)


def flag_of(field: dataclasses.Field, choice: Option) -> str:
    """The option's flag: the field's own (``Option.flag``), else ``--field-name``."""
    return choice.flag or "--" + field.name.replace("_", "-")


def add_params_options(parser: argparse.ArgumentParser, cls: type, *, prefix: str = "",
                       skip: Iterable[str] = ()) -> None:
    """One option per field of ``cls`` that carries an :class:`~magdash.params.Option`.

    Args:
        parser: the command's parser.
        cls: a params dataclass.
        prefix: put before each destination name, so that two params classes of one command
            (the design's ``seed`` and the analysis's) keep their values apart.
        skip: fields the command sets itself.
    """
    for field, choice in _options(cls, skip):
        flag = flag_of(field, choice)
        dest = prefix + field.name
        if isinstance(field.default, bool):
            help_text = choice.help if choice.negate else f"{choice.help} (default: off)"
            parser.add_argument(flag, dest=dest, action="store_const", const=not choice.negate, default=None,
                                help=help_text)
            continue
        kwargs: dict[str, Any] = {"dest": dest, "default": None, "metavar": choice.metavar,
                                  "help": f"{choice.help} (default: {_default_text(field, choice)})"}
        if choice.choices is not None and choice.parse is None:
            kwargs["choices"] = choice.choices
            kwargs.pop("metavar")
        if choice.repeat:
            kwargs["action"] = "append"
        elif choice.parse is None and isinstance(field.default, int | float):
            kwargs["type"] = type(field.default)
        elif choice.parse is None and field.type in ("int | None", "float | None"):
            kwargs["type"] = int if field.type.startswith("int") else float
        parser.add_argument(flag, **kwargs)


def params_from_args(cls: type, args: argparse.Namespace, *, prefix: str = "", **fixed: Any):
    """``cls`` with the options given on the command line, the rest at their defaults.

    Args:
        cls: the params dataclass whose options :func:`add_params_options` added.
        args: the parsed command line.
        prefix: the destinations' prefix given to :func:`add_params_options`.
        fixed: fields the command sets itself (another params object, say).
    """
    values: dict[str, Any] = {}
    for field, choice in _options(cls, fixed):
        given = getattr(args, prefix + field.name, None)
        if given is None:
            continue
        if choice.repeat:
            values[field.name] = tuple(_read(field, choice, item) for item in given)
        else:
            values[field.name] = _read(field, choice, given)
    return cls(**values, **fixed)


def _read(field: dataclasses.Field, choice: Option, text: Any) -> Any:
    if choice.parse is None:
        return text
    try:
        return choice.parse(text)
    except (ValueError, TypeError):
        raise AnalysisError(f"cannot read {flag_of(field, choice)} {text!r}") from None
