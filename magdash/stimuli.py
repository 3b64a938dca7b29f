"""Stimuli: carrier sentences, magnitude sets, and locating a number's tokens.

A stimulus is one carrier sentence with one magnitude written in digits in place of ``{n}``
(Cacioli 2026, arXiv 2604.04469, §2). Its identity for the cache is the sentence text plus
the character span of the number, so two stimulus sets that share sentences share vectors.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from magdash.errors import StimulusError

PLACEHOLDER = "{n}"
MAX_CARRIER_CHARS = 500
MAX_CARRIERS = 10_000
# The largest carrier file that can hold MAX_CARRIERS lines of MAX_CARRIER_CHARS characters
# (4 bytes per character in the worst UTF-8 case, plus a CRLF line end).
MAX_CARRIER_FILE_BYTES = MAX_CARRIERS * (4 * MAX_CARRIER_CHARS + 2)
MAX_MAGNITUDE = 10**12
MAX_MAGNITUDE_COUNT = 1_000_000
# Past this a set costs minutes and gigabytes before extraction starts, and terabytes stored.
MAX_SENTENCES = 1_000_000

PAPER_MAGNITUDES: tuple[int, ...] = (
    *range(1, 11), 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500, 700, 1000,
)
PAPER_CARRIERS: tuple[str, ...] = (
    "The number {n} is a quantity.",
    "There are {n} items.",
    "{n} was the value.",
    "The count reached {n}.",
    "Exactly {n} were measured.",
)
PAPER_SET_NAME = "paper"
POSITIONS = ("last", "first", "mean")
"""Which of the number's tokens is kept: the last (the paper's), the first, or their mean."""
DEFAULT_POSITION = POSITIONS[0]

_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
_NUMBER = re.compile(r"^\s*([+-]?\d+)\s*$")


@dataclass(frozen=True)
class StimulusItem:
    """One sentence with its magnitude and the character span ``[start, end)`` of the number."""

    magnitude: int
    carrier_index: int
    sentence: str
    start: int
    end: int

    @property
    def key(self) -> str:
        """Content address: the same sentence and span always give the same key."""
        digest = hashlib.sha1(f"{self.start}:{self.end}\0{self.sentence}".encode())
        return digest.hexdigest()[:20]


@dataclass(frozen=True)
class StimulusSet:
    """A named grid of magnitudes x carrier sentences."""

    name: str
    carriers: tuple[str, ...]
    magnitudes: tuple[int, ...]
    items: tuple[StimulusItem, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_set_name(self.name)
        object.__setattr__(self, "carriers", tuple(validate_carriers(self.carriers)))
        object.__setattr__(self, "magnitudes", tuple(validate_magnitudes(self.magnitudes)))
        sentences = len(self.carriers) * len(self.magnitudes)
        if sentences > MAX_SENTENCES:
            raise StimulusError(
                f"{len(self.magnitudes):,} magnitudes x {len(self.carriers):,} carriers make "
                f"{sentences:,} sentences: keep a stimulus set to {MAX_SENTENCES:,} at most "
                "(fewer magnitudes or carriers)"
            )
        items = tuple(
            make_item(magnitude, index, carrier)
            for magnitude in self.magnitudes
            for index, carrier in enumerate(self.carriers)
        )
        object.__setattr__(self, "items", items)

    @property
    def content_hash(self) -> str:
        payload = "\n".join(self.carriers) + "\0" + ",".join(map(str, self.magnitudes))
        return hashlib.sha1(payload.encode()).hexdigest()[:16]


def paper_stimuli() -> StimulusSet:
    """The paper's 26 magnitudes x 5 carriers."""
    return StimulusSet(PAPER_SET_NAME, PAPER_CARRIERS, PAPER_MAGNITUDES)


def is_paper_content(stimuli: StimulusSet) -> bool:
    """The paper's 26 magnitudes x 5 carriers, whatever the set is called."""
    return stimuli.content_hash == paper_stimuli().content_hash


def check_reserved_name(stimuli: StimulusSet) -> None:
    """The name 'paper' belongs to the paper's stimuli and they to it: paper extractions and the
    dashboard's first run look the paper's set up by that name, and one content is one set."""
    if stimuli.name == PAPER_SET_NAME and not is_paper_content(stimuli):
        raise StimulusError(f"the name {PAPER_SET_NAME!r} is kept for the paper's stimuli: choose another name")
    if stimuli.name != PAPER_SET_NAME and is_paper_content(stimuli):
        raise StimulusError(
            f"these are the paper's stimuli, stored under the name {PAPER_SET_NAME!r}: use that name "
            f"rather than {stimuli.name!r}"
        )


def format_number(magnitude: int) -> str:
    """Numbers are written in plain digits, as in the paper (no separators)."""
    return str(int(magnitude))


def make_item(magnitude: int, carrier_index: int, carrier: str) -> StimulusItem:
    start = carrier.index(PLACEHOLDER)
    number = format_number(magnitude)
    sentence = carrier[:start] + number + carrier[start + len(PLACEHOLDER):]
    return StimulusItem(magnitude, carrier_index, sentence, start, start + len(number))


MAX_SET_NAME_CHARS = 100


def validate_set_name(name: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise StimulusError("a stimulus set needs a non-empty name")
    if len(name) > MAX_SET_NAME_CHARS:
        raise StimulusError(f"stimulus set name is {len(name)} characters; use at most {MAX_SET_NAME_CHARS}")


def carrier_problems(carriers: Sequence[str]) -> list[str]:
    """Every problem with a list of carrier sentences, one readable line each (empty if fine)."""
    problems: list[str] = []
    if not carriers:
        return ["no carrier sentences: give at least one line containing {n}"]
    if len(carriers) > MAX_CARRIERS:
        return [f"{len(carriers):,} carrier sentences: give at most {MAX_CARRIERS:,}"]
    seen: dict[str, int] = {}
    for line_number, carrier in enumerate(carriers, start=1):
        where = f"line {line_number}"
        if not carrier.strip():
            problems.append(f"{where} is empty: remove it")
            continue
        count = carrier.count(PLACEHOLDER)
        if count == 0:
            problems.append(f"{where} has no {{n}} placeholder: write {{n}} where the number goes")
        elif count > 1:
            problems.append(f"{where} has {count} {{n}} placeholders: keep exactly one")
        if len(carrier) > MAX_CARRIER_CHARS:
            problems.append(
                f"{where} is {len(carrier)} characters long: keep it under {MAX_CARRIER_CHARS}"
            )
        if carrier in seen:
            problems.append(f"{where} repeats line {seen[carrier]}: remove the duplicate")
        else:
            seen[carrier] = line_number
    return problems


def validate_carriers(carriers: Iterable[str]) -> list[str]:
    carriers = [str(c) for c in carriers]
    problems = carrier_problems(carriers)
    if problems:
        shown = "; ".join(problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise StimulusError(f"carrier sentences: {shown}{more}")
    return carriers


def parse_carrier_text(text: str) -> list[str]:
    """Carriers from text with one sentence per line; trailing blank lines are ignored."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    return validate_carriers(lines)


def read_carrier_file(path: str) -> list[str]:
    """Carriers from a UTF-8 text file, one per line."""
    try:
        with open(path, "rb") as handle:
            # One byte past the limit tells a file that is too large from one that just fits.
            raw = handle.read(MAX_CARRIER_FILE_BYTES + 1)
    except OSError as error:
        raise StimulusError(f"cannot read carrier file {path!r}: {error.strerror}") from None
    except ValueError as error:  # a path with a NUL character
        raise StimulusError(f"cannot read carrier file {path!r}: {error}") from None
    if len(raw) > MAX_CARRIER_FILE_BYTES:
        raise StimulusError(
            f"carrier file {path!r} is over {MAX_CARRIER_FILE_BYTES / 1e6:.0f} MB: give at most "
            f"{MAX_CARRIERS:,} sentences of up to {MAX_CARRIER_CHARS} characters, one per line"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise StimulusError(
            f"carrier file {path!r} is not UTF-8 text: save it as UTF-8, one sentence per line"
        ) from None
    if "\0" in text:
        raise StimulusError(f"carrier file {path!r} looks binary: give a text file")
    return parse_carrier_text(text)


def validate_magnitudes(magnitudes: Iterable[int]) -> list[int]:
    values = []
    for value in magnitudes:
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise StimulusError(f"magnitude {value} is not a whole number")
        number = int(value)
        if number <= 0:
            raise StimulusError(f"magnitude {number} is not positive: use numbers >= 1")
        if number > MAX_MAGNITUDE:
            raise StimulusError(f"magnitude {number} is too large: use numbers <= {MAX_MAGNITUDE}")
        values.append(number)
    values = sorted(set(values))
    if len(values) < 1:
        raise StimulusError("no magnitudes given")
    return values


def _shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message: whole when short, else its start and how long it is."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text):,} characters)"


def _whole_number(digits: str) -> int:
    """``int(digits)``, refusing numbers far outside the magnitude range before converting them.

    Python refuses to convert strings of over 4,300 digits (a ValueError), and no magnitude
    needs more than the 13 digits of MAX_MAGNITUDE.
    """
    significant = digits.lstrip("+-").lstrip("0")
    if len(significant) > len(str(MAX_MAGNITUDE)):
        raise StimulusError(
            f"magnitude {_shown(digits, 20)} is out of range: use whole numbers from 1 to {MAX_MAGNITUDE}"
        )
    return int(digits)


def parse_magnitudes(spec: str) -> list[int]:
    """Parse a magnitude spec: ``paper``, ``1-1000``, ``1,2,5,10`` or a mix (``1-10,20,50``)."""
    if not isinstance(spec, str) or not spec.strip():
        raise StimulusError("empty magnitude spec: use e.g. 'paper', '1-1000' or '1,2,5,10'")
    values: list[int] = []
    for part in spec.split(","):
        token = part.strip()
        if token.lower() == PAPER_SET_NAME:
            values.extend(PAPER_MAGNITUDES)
        elif match := _RANGE.match(token):
            low, high = _whole_number(match.group(1)), _whole_number(match.group(2))
            if low > high:
                raise StimulusError(f"range {_shown(token)} runs backwards: write it as {high}-{low}")
            if high - low + 1 > MAX_MAGNITUDE_COUNT:
                raise StimulusError(f"range {_shown(token)} holds over a million numbers: narrow it")
            values.extend(range(low, high + 1))
        elif match := _NUMBER.match(token):
            values.append(_whole_number(match.group(1)))
        else:
            raise StimulusError(
                f"cannot read {_shown(token, 30)} in magnitude spec {_shown(spec)}: "
                "use whole numbers, ranges like 1-1000, commas, or 'paper'"
            )
        # Checked as the list grows, so "1-1000000,1-1000000,..." stops early.
        if len(values) > MAX_MAGNITUDE_COUNT:
            raise StimulusError(f"magnitude spec {_shown(spec)} lists over a million numbers: narrow it")
    return validate_magnitudes(values)


def token_indices_for_span(
    offsets: Sequence[tuple[int, int]], start: int, end: int, position: str = "last"
) -> list[int]:
    """Indices of the tokens that stand for the number occupying characters ``[start, end)``.

    A token overlaps the span when its own non-empty span ``[s, e)`` meets it: ``s < end`` and
    ``e > start``. Special and pad tokens carry the empty span ``(0, 0)`` and never match, so
    BOS tokens and padding on either side cannot shift the result. ``last`` (the paper's rule)
    keeps the final overlapping token, ``first`` the first, ``mean`` all of them.
    """
    if position not in POSITIONS:
        raise StimulusError(f"unknown token position {position!r}: use one of {', '.join(POSITIONS)}")
    overlapping = [
        index for index, (s, e) in enumerate(offsets) if e > s and s < end and e > start
    ]
    if not overlapping:
        raise StimulusError(
            f"no token covers characters {start}-{end}: the tokenizer's offsets do not reach the number"
        )
    if position == "last":
        return [overlapping[-1]]
    if position == "first":
        return [overlapping[0]]
    return overlapping
