"""Comparison stimuli: forced-choice prompts asking a model which of two numbers is larger.

The behavioural side of Cacioli 2026 (arXiv 2603.20642, Paradigm B, read from its public
``scripts/paradigm_b_behaviour.py``): a prompt such as "Which is larger: A) 47 or B) 52? Answer
with only A or B." is put to the model, wrapped in its chat template (one user message, the
generation prompt added) when it has one, and the next-token logits of the two answer options are
read (:mod:`magdash.trial_extraction`). A :class:`ComparisonSet` is the design: references
(the paper's baselines 10, 30, 100, 300, 1000), ratios (1.05 ... 3), both positions of the larger
number (A and B equally often), prompt templates holding exactly one ``{a}`` and one ``{b}``,
the number formats of :data:`magdash.stimuli.NUMBER_FORMATS`, the two answer options, and whether
the chat template is applied (on by default). Its identity (:attr:`ComparisonSet.content_hash`)
is all of these, so two runs of one design share their stored trials.

The numbers are whole: the smaller is the reference (or, with ``jitter``, the reference times a
seeded uniform factor in ``1 ± jitter``, as the paper jittered 30 of its 50 pairs per cell by
±15%), rounded; the larger is the smaller times the ratio, rounded, and at least one more. The
ratio recorded is the nominal one, as the paper's trials record it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from magdash.caveats import Caveat, Severity
from magdash.errors import StimulusError
from magdash.stimuli import (
    DEFAULT_NUMBER_FORMAT,
    MAX_CARRIER_CHARS,
    MAX_MAGNITUDE,
    MAX_SENTENCES,
    carrier_lines,
    get_number_format,
    opens_sentence,
    validate_set_name,
    write_number,
)

if TYPE_CHECKING:
    import pandas as pd

SLOT_A = "{a}"
SLOT_B = "{b}"
OPERANDS = ("a", "b")
"""A trial's two numbers: ``a``, written at ``{a}`` (``value_a``), and ``b``, at ``{b}`` (``value_b``)."""
PAPER_REFERENCES: tuple[int, ...] = (10, 30, 100, 300, 1000)
"""The paper's baselines: the smaller number of each pair (before jitter)."""
PAPER_RATIOS: tuple[float, ...] = (1.05, 1.1, 1.2, 1.5, 2.0, 3.0)
"""The paper's ratios of the larger number to the smaller."""
DEFAULT_OPTIONS: tuple[str, str] = ("A", "B")
"""The answer options, the first naming ``{a}``, the second ``{b}`` (the paper's)."""
PAPER_COMPARISONS_NAME = "paper"
MAX_RATIO = 100.0
MAX_PAIRS = 1000
MAX_JITTER = 0.5
MAX_TEMPLATES = 1000
TEMPLATE_COLUMNS = ("template", "templates", "prompt", "prompts", "text")
"""CSV header names taken as the template column (else the first column that is not a name)."""
NAME_COLUMNS = ("name", "task", "task_type")
"""CSV header names taken as the template's name column."""
TRIAL_COLUMNS = ("trial_id", "task", "template", "format", "reference", "ratio", "pair", "larger",
                 "magnitude_a", "magnitude_b", "value_a", "value_b", "question", "prompt")
"""The columns of :meth:`ComparisonSet.trials`: the contract's trial columns without the model's
outputs (``prompt`` is the question before any chat template; the run replaces it with the text
given to the model), and ``trial_id``, the trial's content address within its set."""


@dataclass(frozen=True)
class ComparisonTemplate:
    """One prompt wording: its name (the trials' ``task``) and its text, with one ``{a}`` and one ``{b}``."""

    name: str
    text: str

    def write(self, value_a: str, value_b: str) -> str:
        """The question with ``value_a`` in place of ``{a}`` and ``value_b`` in place of ``{b}``."""
        start_a, start_b = self.text.index(SLOT_A), self.text.index(SLOT_B)
        first, second = (SLOT_A, value_a), (SLOT_B, value_b)
        if start_b < start_a:
            first, second = second, first
        before, _, after = self.text.partition(first[0])
        middle, _, end = after.partition(second[0])
        return before + first[1] + middle + second[1] + end


PAPER_TEMPLATES: tuple[ComparisonTemplate, ...] = (
    ComparisonTemplate("symbolic", "Which is larger: A) {a} or B) {b}? Answer with only A or B."),
    ComparisonTemplate("B1", "Which represents a larger quantity: A) {a} or B) {b}? Answer with only A or B."),
    ComparisonTemplate("B2", "Without calculating exactly, which is larger: A) {a} or B) {b}? Answer with only A or B."),
    ComparisonTemplate("B3", "About {a} people attended on Monday (A). About {b} attended on Tuesday (B). "
                             "Which was more? Answer with only A or B."),
)
"""The paper's four wordings, named by its task types, each with plain numbers in its slots (the
paper's B1 wrote one side as an expression, "two times five", and B2 as a percentage of a number;
here every slot holds a number in the set's formats)."""


def template_problems(templates: Sequence[str]) -> list[str]:
    """Every problem with a list of template texts, one readable line each (empty if fine).

    Args:
        templates: the texts, in the order the user gave them (line numbers count from 1).
    """
    if not templates:
        return [f"no templates: give at least one line holding {SLOT_A} and {SLOT_B}"]
    if len(templates) > MAX_TEMPLATES:
        return [f"{len(templates):,} templates: give at most {MAX_TEMPLATES:,}"]
    problems: list[str] = []
    seen: dict[str, int] = {}
    for line_number, text in enumerate(templates, start=1):
        where = f"line {line_number}"
        if not text.strip():
            problems.append(f"{where} is empty: remove it")
            continue
        for slot in (SLOT_A, SLOT_B):
            count = text.count(slot)
            if count == 0:
                problems.append(f"{where} has no {slot}: write {slot} where that number goes")
            elif count > 1:
                problems.append(f"{where} has {count} {slot}: keep exactly one")
        if len(text) > MAX_CARRIER_CHARS:
            problems.append(f"{where} is {len(text)} characters long: keep it under {MAX_CARRIER_CHARS}")
        if text in seen:
            problems.append(f"{where} repeats line {seen[text]}: remove the duplicate")
        else:
            seen[text] = line_number
    return problems


def _refuse(problems: Sequence[str]) -> StimulusError:
    shown = "; ".join(problems[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return StimulusError(f"templates=: {shown}{more}", parameters=("templates",))


def validate_templates(templates: object) -> tuple[ComparisonTemplate, ...]:
    """``templates`` as named :class:`ComparisonTemplate` s, checked (:func:`template_problems`).

    Args:
        templates: template objects, texts (named ``template-1``, ... by position), ``(name, text)``
            pairs, or a mapping of names to texts.
    """
    if isinstance(templates, str):
        templates = (templates,)
    if isinstance(templates, Mapping):
        items: list[object] = list(templates.items())
    elif isinstance(templates, Iterable):
        items = list(templates)
    else:
        raise _refuse([f"cannot read {type(templates).__name__}: give template texts or (name, text) pairs"])
    named: list[ComparisonTemplate] = []
    for index, item in enumerate(items, start=1):
        if isinstance(item, ComparisonTemplate):
            named.append(item)
        elif isinstance(item, str):
            named.append(ComparisonTemplate(f"template-{index}", item))
        elif isinstance(item, tuple) and len(item) == 2 and all(isinstance(part, str) for part in item):
            named.append(ComparisonTemplate(item[0].strip() or f"template-{index}", item[1]))
        else:
            raise _refuse([f"item {index} ({item!r:.40}) is not a text or a (name, text) pair"])
    problems = template_problems([template.text for template in named])
    names = [template.name for template in named]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"the names {', '.join(map(repr, repeated))} are given to several templates: name each once")
    if problems:
        raise _refuse(problems)
    return tuple(named)


def parse_templates(text: str, filename: str = "templates.txt") -> tuple[ComparisonTemplate, ...]:
    """Templates from an uploaded text: a ``.csv`` (a template column named template/prompt/text,
    else the first; an optional name column named name/task) or any other text, one template a line
    (CR, LF or CRLF ends one; trailing blank lines are ignored). Problems name the file's own line or
    row numbers in a :class:`StimulusError` naming ``templates=``.

    Args:
        text: the file's text (decoded UTF-8).
        filename: the file's name; one ending in ``.csv`` is read as CSV.
    """
    if "\0" in text:
        raise _refuse([f"{filename} holds a NUL character: give a text file"])
    if not filename.lower().endswith(".csv"):
        return validate_templates(carrier_lines(text))
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as error:
        raise _refuse([f"cannot read the CSV {filename} ({error}): give one template per row"]) from None
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    if not rows:
        raise _refuse([f"the CSV {filename} is empty: give one template per row"])
    header = [cell.strip().lower() for cell in rows[0]]
    text_columns = [i for i, cell in enumerate(header) if cell in TEMPLATE_COLUMNS]
    name_columns = [i for i, cell in enumerate(header) if cell in NAME_COLUMNS]
    has_header = bool(text_columns or name_columns) or not any(SLOT_A in cell for cell in rows[0])
    column = text_columns[0] if text_columns else next(
        (i for i in range(len(header)) if i not in name_columns), 0)
    body = rows[1:] if has_header else rows
    texts = [row[column] if column < len(row) else "" for row in body]
    shift = 1 if has_header else 0
    problems = [re.sub(r"\bline (\d+)", lambda found: f"row {int(found.group(1)) + shift}", problem)
                for problem in template_problems(texts)]
    if problems:
        raise _refuse(problems)
    if not name_columns:
        return validate_templates(texts)
    names = [row[name_columns[0]].strip() if name_columns[0] < len(row) else "" for row in body]
    return validate_templates([(name, template) for name, template in zip(names, texts, strict=True)])


_STATES_THE_ANSWER = re.compile(
    r"\b(?:answer|correct one|right one)\s+is\s+\(?(\w+)\)?|\b(\w+)\)?\s+is\s+(?:the\s+)?(?:larger|bigger|greater|more)\b",
    re.IGNORECASE)


def template_caveats(templates: Sequence[ComparisonTemplate], options: Sequence[str] = DEFAULT_OPTIONS) -> list[Caveat]:
    """What in a template could give the answer away or favour one option, as caveats.

    - ``SERIOUS``: the text states an answer ("the answer is B", "A is larger"): the model can copy it;
    - ``CAUTION``: the options are not named equally often (a template that says "Answer A or B, A
      if unsure" favours A); the text holds digits of its own, which a model can compare with or copy
      instead of the numbers in the slots.

    Args:
        templates: the templates (:func:`validate_templates`).
        options: the two answer options.
    """
    caveats: list[Caveat] = []
    for template in templates:
        bare = template.text.replace(SLOT_A, " ").replace(SLOT_B, " ")
        stated = [word for found in _STATES_THE_ANSWER.finditer(bare) for word in found.groups() if word]
        if any(word in options for word in stated):
            caveats.append(Caveat(Severity.SERIOUS, f"template {template.name!r} states an answer "
                                                    f"({', '.join(word for word in stated if word in options)}): "
                                                    "the model can copy it instead of comparing"))
        counts = [len(re.findall(rf"(?<!\w){re.escape(option)}(?!\w)", bare)) for option in options]
        if counts[0] != counts[1]:
            caveats.append(Caveat(Severity.CAUTION, f"template {template.name!r} names {options[0]!r} {counts[0]} "
                                                    f"times and {options[1]!r} {counts[1]}: it may favour one option"))
        digits = re.findall(r"\d+", bare)
        if digits:
            caveats.append(Caveat(Severity.CAUTION, f"template {template.name!r} holds numbers of its own "
                                                    f"({', '.join(digits)}): the model may compare with or copy them"))
    return caveats


def _validate_options(options: object) -> tuple[str, str]:
    if not (isinstance(options, (tuple, list)) and len(options) == 2 and all(isinstance(o, str) for o in options)):
        raise StimulusError(f"options={options!r}: give two answer options, such as ('A', 'B')",
                            parameters=("options",))
    first, second = (str(option).strip() for option in options)
    if not first or not second or first == second:
        raise StimulusError(f"options={tuple(options)!r}: give two different non-empty answer options",
                            parameters=("options",))
    return first, second


def _validate_references(references: Iterable[object]) -> tuple[int, ...]:
    values: list[int] = []
    for value in references:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not float(value).is_integer() or not 1 <= float(value) <= MAX_MAGNITUDE / MAX_RATIO / 2:
            raise StimulusError(f"references=: {value!r} is not a whole number from 1 to "
                                f"{MAX_MAGNITUDE / MAX_RATIO / 2:.0f}", parameters=("references",))
        values.append(int(value))
    if not values:
        raise StimulusError("references=: give at least one reference", parameters=("references",))
    return tuple(sorted(set(values)))


def _validate_ratios(ratios: Iterable[object]) -> tuple[float, ...]:
    values: list[float] = []
    for value in ratios:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not 1.0 < float(value) <= MAX_RATIO:
            raise StimulusError(f"ratios=: {value!r} is not a ratio above 1 and at most {MAX_RATIO:g} (a ratio of "
                                "1 has no larger number)", parameters=("ratios",))
        values.append(float(value))
    if not values:
        raise StimulusError("ratios=: give at least one ratio", parameters=("ratios",))
    return tuple(sorted(set(values)))


def _whole(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= int(value) <= high:
        raise StimulusError(f"{name}={value!r} must be a whole number from {low} to {high}", parameters=(name,))
    return int(value)


@dataclass(frozen=True)
class ComparisonSet:
    """A design of forced-choice comparisons (the module docstring gives its rules).

    Attributes:
        name: the set's name in the store ("" names it ``comparisons-<hash>``).
        references: the smaller numbers of the pairs, before jitter (whole, ascending).
        ratios: larger / smaller, each above 1 (ascending).
        templates: the prompt wordings (:class:`ComparisonTemplate`; texts or ``(name, text)`` pairs are taken).
        number_formats: how the numbers are written (names in :data:`magdash.stimuli.NUMBER_FORMATS`).
        options: the two answer options, the first naming ``{a}``.
        chat_template: wrap each question in the model's chat template when it has one.
        pairs: pairs per reference x ratio x position (the paper: 25).
        jitter: each pair after the first draws its smaller number from ``reference x (1 ± jitter)`` (the paper: 0.15).
        seed: the jitter's seed.
        n_trials: how many trials the design makes (references x ratios x 2 positions x pairs x
            templates x formats; computed, not given).
    """

    name: str = ""
    references: tuple[int, ...] = PAPER_REFERENCES
    ratios: tuple[float, ...] = PAPER_RATIOS
    templates: tuple[ComparisonTemplate, ...] = PAPER_TEMPLATES
    number_formats: tuple[str, ...] = (DEFAULT_NUMBER_FORMAT,)
    options: tuple[str, str] = DEFAULT_OPTIONS
    chat_template: bool = True
    pairs: int = 1
    jitter: float = 0.0
    seed: int = 0
    n_trials: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "references", _validate_references(self.references))
        set_(self, "ratios", _validate_ratios(self.ratios))
        set_(self, "templates", validate_templates(self.templates))
        formats = (self.number_formats,) if isinstance(self.number_formats, str) else tuple(self.number_formats)
        for number_format in formats:
            get_number_format(number_format)
        if not formats or len(set(formats)) != len(formats):
            raise StimulusError("number_formats=: give each format once, at least one", parameters=("number_formats",))
        set_(self, "number_formats", formats)
        set_(self, "options", _validate_options(self.options))
        if not isinstance(self.chat_template, bool):
            raise StimulusError(f"chat_template={self.chat_template!r} must be True or False",
                                parameters=("chat_template",))
        set_(self, "pairs", _whole(self.pairs, "pairs", 1, MAX_PAIRS))
        set_(self, "seed", _whole(self.seed, "seed", 0, 2**63 - 1))
        if isinstance(self.jitter, bool) or not isinstance(self.jitter, (int, float)) \
                or not 0 <= float(self.jitter) <= MAX_JITTER:
            raise StimulusError(f"jitter={self.jitter!r} must be from 0 to {MAX_JITTER}", parameters=("jitter",))
        set_(self, "jitter", float(self.jitter))
        n_trials = (len(self.references) * len(self.ratios) * 2 * self.pairs * len(self.templates)
                    * len(self.number_formats))
        if n_trials > MAX_SENTENCES:
            raise StimulusError(f"the design makes {n_trials:,} trials: keep it to {MAX_SENTENCES:,} at most "
                                "(fewer references, ratios, templates, formats or pairs)")
        set_(self, "n_trials", n_trials)
        if not self.name:
            set_(self, "name", f"comparisons-{self.content_hash[:8]}")
        validate_set_name(self.name)

    @property
    def content_hash(self) -> str:
        """The design's identity: everything but its name (references, ratios, template names and
        texts, formats, options, chat template, pairs, jitter, seed)."""
        payload = "\0".join((
            ",".join(map(str, self.references)), ",".join(map(repr, self.ratios)),
            "\n".join(f"{template.name}\t{template.text}" for template in self.templates),
            ",".join(self.number_formats), "\t".join(self.options), f"chat={self.chat_template}",
            f"pairs={self.pairs}", f"jitter={self.jitter!r}", f"seed={self.seed}",
        ))
        return hashlib.sha1(payload.encode()).hexdigest()[:16]

    def magnitude_pairs(self) -> list[tuple[int, float, int, int, int]]:
        """Every (reference, ratio, pair, smaller, larger), references then ratios then pairs."""
        rng = np.random.default_rng(self.seed)
        rows = []
        for reference in self.references:
            for ratio in self.ratios:
                for pair in range(self.pairs):
                    factor = 1.0 + rng.uniform(-self.jitter, self.jitter) if self.jitter and pair else 1.0
                    smaller = max(1, round(reference * factor))
                    larger = max(smaller + 1, round(smaller * ratio))
                    rows.append((reference, ratio, pair, smaller, larger))
        return rows

    def trials(self) -> pd.DataFrame:
        """Every trial as a row of :data:`TRIAL_COLUMNS`: formats, templates, references, ratios,
        pairs, then the larger number in A and in B."""
        import pandas as pd

        pairs = self.magnitude_pairs()
        largest = max(larger for *_, larger in pairs)
        rows = []
        for number_format in self.number_formats:
            capitalised = get_number_format(number_format).capitalised
            written = {value: write_number(value, number_format, largest=largest)
                       for _, _, _, smaller, larger in pairs for value in (smaller, larger)}
            for template in self.templates:
                opens = [capitalised and opens_sentence(template.text[: template.text.index(slot)])
                         for slot in (SLOT_A, SLOT_B)]
                for reference, ratio, pair, smaller, larger in pairs:
                    for larger_option, (magnitude_a, magnitude_b) in (
                            (self.options[1], (smaller, larger)), (self.options[0], (larger, smaller))):
                        value_a, value_b = (
                            _capital(written[magnitude]) if opens[slot] else written[magnitude]
                            for slot, magnitude in enumerate((magnitude_a, magnitude_b)))
                        question = template.write(value_a, value_b)
                        rows.append((trial_id(question, self.options, larger_option, reference, ratio, pair), template.name, template.text,
                                     number_format, float(reference), ratio, pair,
                                     "A" if larger_option == self.options[0] else "B",
                                     magnitude_a, magnitude_b, value_a, value_b, question, question))
        return pd.DataFrame(rows, columns=list(TRIAL_COLUMNS))

    def caveats(self) -> list[Caveat]:
        """What in the templates may give the answer away (:func:`template_caveats`)."""
        return template_caveats(self.templates, self.options)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def trial_id(question: str, options: Sequence[str], larger: str, reference: float, ratio: float, pair: int) -> str:
    """A trial's content address: its question, options, correct option and cell (two cells can
    ask the same question: at reference 10, ratios 1.05 and 1.1 both compare 10 with 11).

    Args:
        question: the question before any chat template.
        options: the two answer options.
        larger: the option holding the larger number.
        reference: the cell's reference.
        ratio: the cell's nominal ratio.
        pair: the pair's index in its cell.
    """
    payload = f"{question}\0{options[0]}\0{options[1]}\0{larger}\0{float(reference)!r}\0{float(ratio)!r}\0{pair}"
    return hashlib.sha1(payload.encode()).hexdigest()[:20]


def paper_comparisons(pairs: int = 1, jitter: float = 0.0, number_formats: Sequence[str] = (DEFAULT_NUMBER_FORMAT,),
                      chat_template: bool = True) -> ComparisonSet:
    """The paper's design: its references, ratios and four wordings (:data:`PAPER_TEMPLATES`),
    options A and B, the chat template applied; named 'paper' in digits with one unjittered pair
    per cell and position, else ``comparisons-<hash>``. The paper ran 25 pairs per cell and
    position, 30 of each 50 jittered by ±15% (``pairs=25, jitter=0.15`` comes close: here every
    pair but the first is jittered).

    Args:
        pairs: pairs per reference x ratio x position.
        jitter: the relative jitter of the smaller number of every pair after the first.
        number_formats: how the numbers are written.
        chat_template: wrap the questions in the model's chat template when it has one.
    """
    formats = tuple(number_formats)
    plain = pairs == 1 and not jitter and formats == (DEFAULT_NUMBER_FORMAT,) and chat_template
    return ComparisonSet(PAPER_COMPARISONS_NAME if plain else "", PAPER_REFERENCES, PAPER_RATIOS, PAPER_TEMPLATES,
                         formats, DEFAULT_OPTIONS, chat_template, pairs, jitter)
