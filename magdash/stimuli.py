"""Stimuli: carrier sentences, magnitude sets, and locating a number's tokens.

A stimulus is one carrier sentence with one magnitude written in place of ``{n}`` (Cacioli
2026, arXiv 2604.04469, §2): in digits, as in the paper, or in another written form of the
set's :data:`NUMBER_FORMATS` (``grouped`` "1,000", ``spaced`` "1 000", ``padded`` "0007",
``words`` "one thousand"). Its identity for the cache is the sentence text plus the character
span of the number, so two stimulus sets that share sentences share vectors; the span always
covers the whole written form, so the ``last``, ``first`` and ``mean`` token rules keep their
meaning in every format.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
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


# Number formats: how a magnitude is written in place of {n}. One registry names them all: the
# CLI's --number-format, the API and the pages offer these names and nothing else.
DEFAULT_NUMBER_FORMAT = "digits"
_SENTENCE_ENDS = ".!?"


@dataclass(frozen=True)
class NumberFormat:
    """One written form of the numbers: its name, a one-line description and its writer.

    ``write(magnitude, largest)`` gives the text for a whole ``magnitude`` from 1 to
    :data:`MAX_MAGNITUDE`; ``largest`` (the set's largest magnitude) is read only by formats with
    ``needs_largest``. ``capitalised`` formats start with a capital letter where the number
    opens a sentence (digits have no case).
    """

    name: str
    description: str
    write: Callable[[int, int | None], str]
    needs_largest: bool = False
    capitalised: bool = False


def _write_digits(magnitude: int, largest: int | None) -> str:
    return str(magnitude)


def _write_grouped(magnitude: int, largest: int | None) -> str:
    return f"{magnitude:,}"


def _write_spaced(magnitude: int, largest: int | None) -> str:
    return f"{magnitude:,}".replace(",", " ")


def _write_padded(magnitude: int, largest: int | None) -> str:
    if largest < magnitude:
        raise StimulusError(f"cannot pad {magnitude} to the width of {largest}: largest must be the set's largest")
    return str(magnitude).zfill(len(str(largest)))


def _write_words(magnitude: int, largest: int | None) -> str:
    # Imported here: only word sets need it, and the package's import stays light.
    from num2words import num2words

    # num2words writes "one thousand, two hundred and thirty-four"; the commas between groups
    # go, so that punctuation inside the number is what the grouped format alone varies.
    return num2words(magnitude, lang="en").replace(",", "")


NUMBER_FORMATS: dict[str, NumberFormat] = {
    number_format.name: number_format
    for number_format in (
        NumberFormat(
            "digits", "plain digits, as in the paper: 7, 23, 1000", _write_digits,
        ),
        NumberFormat(
            "grouped", "digits with a comma between groups of three (English thousands separator): 7, 23, 1,000",
            _write_grouped,
        ),
        NumberFormat(
            "spaced", "digits with a space between groups of three (SI / ISO 80000-1 grouping, a plain space, "
            "also at four digits): 7, 23, 1 000", _write_spaced,
        ),
        NumberFormat(
            "padded", "digits zero-padded to the width of the set's largest magnitude, so every number has "
            "as many characters: 0007, 0023, 1000 (for 1..1000)", _write_padded, needs_largest=True,
        ),
        NumberFormat(
            "words", "English number words (num2words): seven, twenty-three, one hundred and fifty, one thousand; "
            "capitalised where the number opens a sentence", _write_words, capitalised=True,
        ),
    )
}
"""Every number format by name (the docstring of :func:`write_number` says why each is here)."""

NUMBER_FORMAT_NAMES: tuple[str, ...] = tuple(NUMBER_FORMATS)


def get_number_format(name: str) -> NumberFormat:
    """The number format called ``name``; a :class:`StimulusError` listing the choices otherwise."""
    try:
        return NUMBER_FORMATS[name]
    except (KeyError, TypeError):
        raise StimulusError(
            f"unknown number format {name!r}: use one of {', '.join(NUMBER_FORMAT_NAMES)}"
        ) from None


def write_number(magnitude: int, number_format: str = DEFAULT_NUMBER_FORMAT, *, largest: int | None = None) -> str:
    """``magnitude`` written in ``number_format`` (a name in :data:`NUMBER_FORMATS`).

    The formats, and the question each answers (``largest`` is the set's largest magnitude,
    read by ``padded`` alone):

    - ``digits`` "1000": the paper's form.
    - ``grouped`` "1,000": the first control a reviewer asks for; the comma is its own token in
      every tokenizer magdash ships, so the number's tokens change from 1,000 up while the
      magnitude's digits stay.
    - ``spaced`` "1 000": SI / ISO 80000-1 digit grouping, with a plain space. The SI's thin or
      narrow no-break space (U+2009, U+202F) is not used: byte-level BPE (SmolLM2) writes U+202F
      as two byte tokens, SentencePiece with byte fallback (Gemma 3) as three ``<0x..>``
      tokens, text no model reads for numbers; a plain space is what typed text uses. The SI
      leaves a four-digit number ungrouped; here 1000 is "1 000", else the paper's magnitudes
      would read as digits.
    - ``padded`` "0007": every number as wide as ``largest`` (4 characters for 1..1000). With a
      per-digit tokenizer every number then has the same token count, so the digit-count
      confound (the last token of 10, 20, ..., 1000 is "0"; V at the last digit mixes magnitude
      with the number of digits) is removed by design, not by a covariate. Leading zeros are
      rare in text (codes, times), so the control changes how usual the form is as well.
    - ``words`` "twenty-three": English number words from num2words (British usage, its
      default): compound tens hyphenated (twenty-three), "and" before the last two digits of a
      group (one hundred and fifty, one thousand and one), no commas between groups (one
      thousand two hundred and thirty-four), capitalised where the number opens a sentence
      ("Seven was the value."). Magnitude and digit identity then share no token.

    Magnitudes are whole numbers from 1 to :data:`MAX_MAGNITUDE`; anything else is a
    :class:`StimulusError` saying so.
    """
    chosen = get_number_format(number_format)
    number = _writable_magnitude(magnitude, chosen.name)
    if largest is not None:
        largest = _writable_magnitude(largest, chosen.name)
    elif chosen.needs_largest:
        raise StimulusError(
            f"the {chosen.name} format writes every number to the width of the set's largest magnitude: give largest"
        )
    return chosen.write(number, largest)


def _writable_magnitude(magnitude: object, number_format: str) -> int:
    """``magnitude`` as an int when a number format can write it, else a StimulusError."""
    what = f"the {number_format} format writes whole numbers from 1 to {MAX_MAGNITUDE}"
    if isinstance(magnitude, bool) or not isinstance(magnitude, (int, np.integer, float, np.floating)):
        raise StimulusError(f"cannot write {magnitude!r}: {what}")
    if isinstance(magnitude, (float, np.floating)) and not float(magnitude).is_integer():
        raise StimulusError(f"cannot write {magnitude!r}, not a whole number: {what}")
    number = int(magnitude)
    if not 1 <= number <= MAX_MAGNITUDE:
        raise StimulusError(f"cannot write {number}, out of range: {what}")
    return number


def opens_sentence(prefix: str) -> bool:
    """Whether a number after ``prefix`` (the carrier's text before ``{n}``) opens a sentence:
    nothing but white space before it, or white space after a full stop, "!" or "?"."""
    stripped = prefix.rstrip()
    return not stripped or (stripped != prefix and stripped[-1] in _SENTENCE_ENDS)


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
    """A named grid of magnitudes x carrier sentences, the numbers written in ``number_format``
    (a name in :data:`NUMBER_FORMATS`; ``digits``, the paper's, by default).

    Attributes:
        name: the set's name in the store.
        carriers: the carrier sentences, each with one ``{n}``.
        magnitudes: the magnitudes, ascending.
        number_format: how the numbers are written (``digits`` by default).
        items: every (magnitude, carrier) sentence, magnitudes first (built from the rest).
    """

    name: str
    carriers: tuple[str, ...]
    magnitudes: tuple[int, ...]
    number_format: str = DEFAULT_NUMBER_FORMAT
    items: tuple[StimulusItem, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_set_name(self.name)
        object.__setattr__(self, "carriers", tuple(validate_carriers(self.carriers)))
        object.__setattr__(self, "magnitudes", tuple(validate_magnitudes(self.magnitudes)))
        get_number_format(self.number_format)
        sentences = len(self.carriers) * len(self.magnitudes)
        if sentences > MAX_SENTENCES:
            raise StimulusError(
                f"{len(self.magnitudes):,} magnitudes x {len(self.carriers):,} carriers make "
                f"{sentences:,} sentences: keep a stimulus set to {MAX_SENTENCES:,} at most "
                "(fewer magnitudes or carriers)"
            )
        if self.number_format == DEFAULT_NUMBER_FORMAT:
            items = tuple(
                make_item(magnitude, index, carrier)
                for magnitude in self.magnitudes
                for index, carrier in enumerate(self.carriers)
            )
        else:
            items = self._formatted_items()
        object.__setattr__(self, "items", items)

    def _formatted_items(self) -> tuple[StimulusItem, ...]:
        """The items of a set in another format than digits: each number written once, not once
        per carrier (number words cost microseconds each, a million sentences seconds)."""
        chosen = get_number_format(self.number_format)
        largest = self.magnitudes[-1]
        written = [write_number(magnitude, chosen.name, largest=largest) for magnitude in self.magnitudes]
        capitalise = [chosen.capitalised and opens_sentence(carrier[: carrier.index(PLACEHOLDER)])
                      for carrier in self.carriers]
        return tuple(
            _place(magnitude, index, carrier, _capitalised(number) if capitalise[index] else number)
            for magnitude, number in zip(self.magnitudes, written, strict=True)
            for index, carrier in enumerate(self.carriers)
        )

    @property
    def content_hash(self) -> str:
        """The set's content identity: carriers, magnitudes and, unless digits, the number format.

        Digits hash as they did before formats existed, so stored sets keep their identity; any
        other format is appended after a NUL, which no digits payload ends with (it ends in a
        magnitude), so "1000" and "1,000" sets can never share a hash.
        """
        return content_hash(self.carriers, self.magnitudes, self.number_format)


def content_hash(carriers: Sequence[str], magnitudes: Sequence[int], number_format: str = DEFAULT_NUMBER_FORMAT) -> str:
    """:attr:`StimulusSet.content_hash` of these (validated) carriers and magnitudes in ``number_format``,
    without writing the set's sentences: how the same set in another format is looked up in a store."""
    payload = "\n".join(carriers) + "\0" + ",".join(map(str, magnitudes))
    if number_format != DEFAULT_NUMBER_FORMAT:
        payload += "\0number_format=" + number_format
    return hashlib.sha1(payload.encode()).hexdigest()[:16]


def paper_stimuli(number_format: str = DEFAULT_NUMBER_FORMAT) -> StimulusSet:
    """The paper's 26 magnitudes x 5 carriers, in digits (named 'paper') or another format
    (named by :func:`paper_set_name`).

    Args:
        number_format: how the numbers are written: a name in :data:`NUMBER_FORMATS` (digits, the paper's, by default).
    """
    return StimulusSet(paper_set_name(number_format), PAPER_CARRIERS, PAPER_MAGNITUDES, number_format)


def paper_set_name(number_format: str = DEFAULT_NUMBER_FORMAT) -> str:
    """'paper' for the paper's stimuli in digits, 'paper-<format>' in another number format."""
    get_number_format(number_format)
    return PAPER_SET_NAME if number_format == DEFAULT_NUMBER_FORMAT else f"{PAPER_SET_NAME}-{number_format}"


def default_stimulus_set(available: Sequence[str]) -> str | None:
    """The stimulus set an analysis uses when none is named, the one rule of every entry point
    (the Python API, the CLI, the runs and the dashboard's first view): the paper's set in digits
    ('paper', what ``extract`` stores by default) when it is among ``available``, else the only
    set there is; None when there are several others (the caller asks for one) or none.

    Args:
        available: the complete stimulus sets to choose from (a model's, or those two models share).
    """
    if PAPER_SET_NAME in available:
        return PAPER_SET_NAME
    return available[0] if len(available) == 1 else None


def several_sets_message(holder: str, available: Sequence[str]) -> str:
    """Why no stimulus set was chosen for ``holder`` ("model 'm' has", "models 'a' and 'b' share")
    among ``available`` (:func:`default_stimulus_set` returned None), naming the parameter to give.

    Args:
        holder: who holds the sets, with its verb.
        available: the complete sets to choose from.
    """
    return (f"{holder} several stimulus sets ({', '.join(available)}) and none is {PAPER_SET_NAME!r}; "
            "choose one with stimuli=")


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


def make_item(
    magnitude: int,
    carrier_index: int,
    carrier: str,
    number_format: str = DEFAULT_NUMBER_FORMAT,
    *,
    largest: int | None = None,
) -> StimulusItem:
    """The carrier with ``magnitude`` written in ``number_format`` in place of ``{n}``; the item's
    span ``[start, end)`` covers the whole written form (every digit, separator and word).

    ``largest`` is the set's largest magnitude, needed by formats that write every number to one
    width (``padded``). A format with ``capitalised`` set writes its first letter in upper case
    where the number opens a sentence (:func:`opens_sentence`).
    """
    if number_format == DEFAULT_NUMBER_FORMAT:
        return _place(magnitude, carrier_index, carrier, format_number(magnitude))
    number = write_number(magnitude, number_format, largest=largest)
    if get_number_format(number_format).capitalised and opens_sentence(carrier[: carrier.index(PLACEHOLDER)]):
        number = _capitalised(number)
    return _place(magnitude, carrier_index, carrier, number)


def _place(magnitude: int, carrier_index: int, carrier: str, number: str) -> StimulusItem:
    """The item with the written ``number`` in place of ``{n}``, its span covering all of it."""
    start = carrier.index(PLACEHOLDER)
    sentence = carrier[:start] + number + carrier[start + len(PLACEHOLDER):]
    return StimulusItem(magnitude, carrier_index, sentence, start, start + len(number))


def _capitalised(number: str) -> str:
    return number[:1].upper() + number[1:]


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


_LINE_END = re.compile(r"\r\n|\r|\n")


def carrier_lines(text: str) -> list[str]:
    """The lines of a carrier text, one sentence each: CRLF (Windows), LF (Unix) and a lone CR (old
    Mac editors, some spreadsheets' exports) each end a line; trailing blank lines are dropped."""
    lines = _LINE_END.split(text)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def parse_carrier_text(text: str) -> list[str]:
    """Carriers from text with one sentence per line (:func:`carrier_lines`), checked."""
    return validate_carriers(carrier_lines(text))


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
    offsets: Sequence[tuple[int, int]], start: int, end: int, position: str = DEFAULT_POSITION
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
