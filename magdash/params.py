"""Defaults and input rules shared by every analysis, its CLI command and its page.

Each analysis has a params dataclass shared by the CLI, the Python API and the app
(:class:`magdash.variability.analysis_params.AnalysisParams`, :class:`magdash.phase.phase_params.PhaseParams`, ...);
the values they have in common are defined here once, with the parser of layer bands that the
CLI options and the dashboard's URL share, and :func:`option`, how a params field says what its
command-line option is (the CLI's options are generated from the fields: :mod:`magdash.cli.options`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

from magdash.errors import AnalysisError

DEFAULT_N_BOOT = 10_000
"""Bootstrap resamples of every interval, as in the paper's script (Cacioli 2026)."""

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` while an extraction or analysis runs."""

DEFAULT_CI = 0.95
"""The confidence level of every interval unless a user asks for another."""

DTYPES = ("float32", "float16", "bfloat16")
"""The dtypes a model is loaded in for an extraction."""
DEFAULT_DTYPE = DTYPES[0]
DEVICES = ("auto", "cpu", "cuda", "mps")
"""The devices a model runs on, by name (a CUDA device by index, ``cuda:1``, is typed); ``auto``
takes CUDA, then MPS, then the CPU."""
DEFAULT_DEVICE = DEVICES[0]

SEED_LIMIT = 2**63
"""Seeds are whole numbers in [0, SEED_LIMIT): numpy's generators take any seed >= 0, and the
metric tables keep a result's seed as a BIGINT."""


def seed_problem(seed: object, name: str = "seed") -> str | None:
    """What is wrong with ``seed`` as a seed, or None when it is one.

    Args:
        seed: the value given.
        name: the parameter's name, for the message.
    """
    if isinstance(seed, bool) or not isinstance(seed, Integral) or not 0 <= seed < SEED_LIMIT:
        return f"{name}={seed!r} must be a whole number from 0 to 2**63 - 1"
    return None


MAX_LAYERS = 10_000
"""More layers than any model has: a longer range is a typo, refused before it is built."""


def parse_layers(text: str) -> list[int]:
    """Parse ``"START-END"`` (inclusive) or ``"A,B,C"`` into layer indices.

    Args:
        text: the layers as written on the command line or in a URL.
    """
    text = text.strip()
    try:
        if "-" in text:
            start, end = (int(part) for part in text.split("-", 1))
            if 0 <= end < start:
                raise AnalysisError(f"layers {text!r} run backwards: write {end}-{start}")
            if end - start >= MAX_LAYERS:
                raise AnalysisError(f"layers {text!r} span more than {MAX_LAYERS} layers; no model has that many")
            layers = list(range(start, end + 1))
        else:
            layers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise AnalysisError(
            f"cannot read layers {text!r}; write START-END (e.g. 16-31) or a list (16,20,24)"
        ) from None
    if not layers or min(layers) < 0:
        raise AnalysisError(f"layers {text!r} must name at least one layer index >= 0")
    return layers


def parse_band(text: str) -> tuple[int, int]:
    """A band of consecutive layers, ``"3-5"`` -> (3, 5) or ``"4"`` -> (4, 4), read by :func:`parse_layers`.

    Args:
        text: the band as written (``3-5``, or one layer).
    """
    layers = parse_layers(text)
    if layers != list(range(layers[0], layers[-1] + 1)):
        raise AnalysisError(f"layers {text.strip()!r} are not one band of consecutive layers; write FIRST-LAST")
    return layers[0], layers[-1]


def ranges(values: Sequence[int]) -> str:
    """1, 2, 3, 5, 7, 8 -> "1-3, 5, 7-8": how the warnings name magnitudes and layers
    (the inverse of :func:`parse_layers`'s list form).

    Args:
        values: whole numbers, in any order, repeats allowed.
    """
    values = sorted(set(int(v) for v in values))
    parts, start = [], None
    for index, value in enumerate(values):
        if start is None:
            start = value
        if index + 1 == len(values) or values[index + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}-{value}")
            start = None
    return ", ".join(parts)


@dataclass(frozen=True)
class Option:
    """How a params dataclass field appears on the command line.

    ``help`` says what the value means (the default is appended from the field, or
    ``default_text`` when the field's default means "decided elsewhere", e.g. by the
    conventions); ``flag`` replaces ``--field-name``; ``parse`` reads the option's text into the
    field's value (comma-separated lists, layer bands); ``repeat`` gives the option once per value;
    ``negate`` makes a flag that sets a field that is true by default to false.

    Attributes:
        help: what the value means, shown by ``--help`` and in the reference.
        flag: the option's flag when it is not ``--field-name``.
        metavar: the placeholder of the value in the usage line.
        choices: the values allowed, when there is a fixed list.
        parse: reads the option's text into the field's value (lists, bands); None: the field's own type.
        repeat: the option is given once per value (``--variant A --variant B``).
        negate: a flag that sets a field that is true by default to false.
        default_text: how ``--help`` writes the default when the field's default means "decided elsewhere".
    """

    help: str
    flag: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    parse: Callable[[str], Any] | None = None
    repeat: bool = False
    negate: bool = False
    default_text: str | None = None


OPTION_KEY = "option"


def option(help: str, **details: Any) -> dict[str, Option]:
    """Field metadata: ``field(default=..., metadata=option("bootstrap resamples", metavar="N"))``.

    Args:
        help: what the value means.
        details: the other fields of :class:`Option` (flag, metavar, choices, parse, repeat, negate, default_text).
    """
    return {OPTION_KEY: Option(help, **details)}


def comma_separated(kind: Callable[[str], Any]) -> Callable[[str], tuple]:
    """A parser of ``"a,b,c"`` into a tuple of ``kind``; a text it cannot read raises ValueError
    saying why (the command line puts its option before it).

    Args:
        kind: the type of each item (``int``, ``float``, ``str``).
    """

    def parse(text: str) -> tuple:
        try:
            return tuple(kind(part.strip()) for part in text.split(",") if part.strip())
        except ValueError:
            raise ValueError("give a comma-separated list") from None

    return parse


def parse_pair(example: str) -> Callable[[str], tuple[float, float]]:
    """A parser of ``"LO,HI"`` into two numbers; a text it cannot read raises ValueError saying why.

    Args:
        example: a valid value, shown in the error message.
    """
    read = comma_separated(float)

    def parse(text: str) -> tuple[float, float]:
        parts = read(text)
        if len(parts) != 2:
            raise ValueError(f"give two numbers LO,HI (e.g. {example})")
        return parts[0], parts[1]

    return parse


def layer_tuple(text: str) -> tuple[int, ...]:
    """:func:`parse_layers` as a tuple (a params field's value).

    Args:
        text: the layers as written (``16-31`` or ``16,20,24``).
    """
    return tuple(parse_layers(text))
