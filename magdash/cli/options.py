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
import functools
import re
import weakref
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


def _help(text: str) -> str:
    """A help text as the command line says it: a params field it names (``conventions='paper'``,
    ``ray=``) written as that field's option (``--conventions paper``, ``--ray``)."""
    if "=" not in text:
        return text
    flags = {field.name: flag_of(field, choice) for cls in _params_classes() for field, choice in _options(cls)}
    return re.sub(rf"(?<![\w.-])({'|'.join(flags)})=('[^']*')?",
                  lambda found: f"{flags[found.group(1)]} {(found.group(2) or '').strip(chr(39))}".rstrip(), text)


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
            help_text = _help(choice.help) if choice.negate else f"{_help(choice.help)} (default: off)"
            _FIELD_OF[parser.add_argument(flag, dest=dest, action="store_const", const=not choice.negate,
                                          default=None, help=help_text)] = field.name
            continue
        kwargs: dict[str, Any] = {"dest": dest, "default": None, "metavar": choice.metavar,
                                  "help": f"{_help(choice.help)} (default: {_help(_default_text(field, choice))})"}
        if choice.choices is not None and choice.parse is None:
            kwargs["choices"] = choice.choices
            kwargs.pop("metavar")
        if choice.repeat:
            kwargs["action"] = "append"
        elif choice.parse is None and isinstance(field.default, int | float):
            kwargs["type"] = type(field.default)
        elif choice.parse is None and field.type in ("int | None", "float | None"):
            kwargs["type"] = int if field.type.startswith("int") else float
        _FIELD_OF[parser.add_argument(flag, **kwargs)] = field.name


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
    except (ValueError, TypeError) as error:
        reason = f": {error}" if isinstance(error, ValueError) and str(error) else ""
        raise AnalysisError(f"cannot read {flag_of(field, choice)} {text!r}{reason}") from None


def _params_classes() -> tuple[type, ...]:
    from magdash.controls.controls_params import ControlsParams, DesignParams
    from magdash.extract_params import ExtractParams
    from magdash.phase.phase_params import PhaseParams
    from magdash.probes.probe_params import ProbeParams
    from magdash.sweep.sweep_params import SweepParams
    from magdash.variability.analysis_params import AnalysisParams

    # The analysis first: a field name several classes share (``seed``, ``n_boot``) is its option
    # where no command says otherwise.
    return (AnalysisParams, ExtractParams, PhaseParams, ControlsParams, DesignParams, ProbeParams, SweepParams)


def parameter_actions(parser: argparse.ArgumentParser | None = None) -> dict[str, argparse.Action]:
    """The option that sets each parameter a library message may name (``exclude_carriers`` ->
    ``--exclude-carrier``): the command's own options first (:func:`command_flags`), then every
    params class's field (:func:`flag_of`), the analysis's where several classes share a name.

    Args:
        parser: the parser of the command that speaks; None: the params classes' options only.
    """
    return {**_every_params_option(), **command_flags(parser)}


@functools.cache
def _every_params_option() -> dict[str, argparse.Action]:
    from magdash.cli import build_parser

    by_name: dict[str, argparse.Action] = {}
    for cls in _params_classes():
        own = argparse.ArgumentParser(add_help=False)
        add_params_options(own, cls)
        for name, action in command_flags(own).items():
            by_name.setdefault(name, action)
    # then the options of every command that no params class declares (``--name``, ``--carriers``)
    for command in _subcommands(build_parser()):
        for name, action in command_flags(command).items():
            by_name.setdefault(name, action)
    return by_name


def _subcommands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    return [command for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for command in action.choices.values()]


def command_flags(parser: argparse.ArgumentParser | None) -> dict[str, argparse.Action]:
    """The options of one command by the parameter each sets: the params field it was made from
    (``n_boot`` for the probe's ``--probe-n-boot``) unless an option without a prefix sets one of
    that name, and its destination (``store``).

    Args:
        parser: the command's parser; None: no command's options.
    """
    if parser is None:
        return {}
    actions = [action for action in parser._actions if action.option_strings and action.dest != "help"]
    by_name = {action.dest: action for action in actions}
    for action in actions:  # an unprefixed destination keeps its name: the analysis's ``seed``, not ``--perm-seed``
        by_name.setdefault(_FIELD_OF.get(action, action.dest), action)
    return by_name


_FIELD_OF: weakref.WeakKeyDictionary[argparse.Action, str] = weakref.WeakKeyDictionary()
"""The params field each generated option sets (:func:`add_params_options`), whatever its prefix."""
