"""Stimuli input for the dashboard: carrier uploads, the magnitude editor, tokenization preview,
and the comparison templates of the Behaviour page (uploaded, checked, saved as a comparison set).

Uploads are validated with one message per problem that says what to fix (not UTF-8, binary,
empty lines, missing or repeated ``{n}``, duplicates, too long; see
:func:`magdash.stimuli.carrier_problems`), numbered as the user sees the file (lines of a .txt,
rows of a .csv). The tokenization preview shows, for a loaded model, every token that overlaps
each number and the one whose vector is stored (Cacioli 2026, arXiv 2604.04469: the last token
overlapping the number's characters).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from magdash.caveats import Caveat
from magdash.comparison_stimuli import (
    PAPER_COMPARISONS_NAME,
    ComparisonSet,
    ComparisonTemplate,
    paper_comparisons,
    parse_templates,
    template_caveats,
)
from magdash.errors import StimulusError
from magdash.stimuli import (
    DEFAULT_NUMBER_FORMAT,
    DEFAULT_POSITION,
    PAPER_SET_NAME,
    PLACEHOLDER,
    POSITIONS,
    StimulusSet,
    carrier_lines,
    carrier_problems,
    check_reserved_name,
    parse_magnitudes,
    validate_magnitudes,
    write_number,
)
from magdash.store import ModelRecord, Store

# -- stimuli input -----------------------------------------------------------------------

CARRIER_COLUMNS = ("carrier", "carriers", "sentence", "sentences", "template", "text")
"""CSV header names taken as the carrier column (else the first column is used)."""

MAX_PROBLEMS_SHOWN = 10
"""Problems shown one by one; a file with thousands of bad lines gets a count of the rest."""


@dataclass(frozen=True)
class CarrierInput:
    """Carrier sentences read from an upload or a text box, and what is wrong with them."""

    carriers: list[str]
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and bool(self.carriers)


def decode_upload(data: bytes, filename: str) -> tuple[str | None, list[str]]:
    """UTF-8 text of an upload (a BOM is dropped), or a problem saying what to fix."""
    if b"\0" in data:
        return None, [f"{filename} looks binary: upload a text file (.txt or .csv) saved as UTF-8"]
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        return None, [f"{filename} is not UTF-8 (first bad byte on line {line}): save it as UTF-8 text and upload it again"]


def problems_to_show(problems: Sequence[str], limit: int = MAX_PROBLEMS_SHOWN) -> list[str]:
    """The first ``limit`` problems and, when there are more, one line that counts the rest."""
    if len(problems) <= limit:
        return list(problems)
    rest = len(problems) - limit
    return [*problems[:limit], f"and {rest} more problem{'s' if rest > 1 else ''}: fix the ones above first"]


def carriers_from_text(text: str) -> CarrierInput:
    """One carrier per line (CR, LF or CRLF ends one); trailing blank lines are ignored, everything
    else is checked; text holding a NUL character is refused, as an upload holding one is."""
    lines = carrier_lines(text)
    if "\0" in text:
        first = next(number for number, line in enumerate(lines, start=1) if "\0" in line)
        return CarrierInput([], [f"line {first} holds a NUL character: type or paste plain text"])
    return CarrierInput(lines, carrier_problems(lines))


def carriers_from_csv(text: str) -> CarrierInput:
    """The carrier column of a CSV: a column named carrier/sentence/template/text, else the first.

    A first row without ``{n}`` in that column is taken as a header and skipped. Problems name
    the CSV's own row numbers (the header is row 1).
    """
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))  # rows end in CR, LF or CRLF
    except csv.Error as error:
        return CarrierInput([], [f"cannot read the CSV ({error}): give one carrier per row"])
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    if not rows:
        return CarrierInput([], ["the CSV is empty: give one carrier sentence per row"])
    header = [cell.strip().lower() for cell in rows[0]]
    named = [i for i, cell in enumerate(header) if cell in CARRIER_COLUMNS]
    column = named[0] if named else 0
    has_header = bool(named) or (bool(rows[0]) and PLACEHOLDER not in rows[0][0])
    body = rows[1:] if has_header else rows
    carriers = [row[column] if column < len(row) else "" for row in body]
    shift = 1 if has_header else 0
    problems = [
        _LINE_NUMBER.sub(lambda match: f"row {int(match.group(1)) + shift}", problem)
        for problem in carrier_problems(carriers)
    ]
    return CarrierInput(carriers, problems)


_LINE_NUMBER = re.compile(r"\bline (\d+)")


def read_carrier_upload(filename: str, data: bytes) -> CarrierInput:
    """Carriers from an uploaded .txt (one per line) or .csv (a carrier column)."""
    text, problems = decode_upload(data, filename)
    if text is None:
        return CarrierInput([], problems)
    if filename.lower().endswith(".csv"):
        return carriers_from_csv(text)
    return carriers_from_text(text)


@dataclass(frozen=True)
class TemplateInput:
    """Comparison templates read from an upload (the Behaviour page's prompts), what is wrong with
    them (a refused file: nothing is taken), and what in them may give the answer away."""

    templates: tuple[ComparisonTemplate, ...] = ()
    problems: list[str] = field(default_factory=list)
    caveats: list[Caveat] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and bool(self.templates)

    def table(self) -> pd.DataFrame:
        """The templates as the page lists them: name (the trials' task) and text."""
        return pd.DataFrame({"template_name": [template.name for template in self.templates],
                             "template": [template.text for template in self.templates]})


def read_template_upload(filename: str, data: bytes) -> TemplateInput:
    """Comparison templates from an uploaded .txt (one per line) or .csv (a template column, an optional
    name column): :func:`magdash.comparison_stimuli.parse_templates`, whose message names each bad line
    or row (a template without ``{b}``, ...), and the caveats of :func:`~magdash.comparison_stimuli.template_caveats`.

    Args:
        filename: the upload's name (``.csv`` is read as CSV).
        data: its bytes.
    """
    text, problems = decode_upload(data, filename)
    if text is None:
        return TemplateInput(problems=problems)
    try:
        templates = parse_templates(text, filename)
    except StimulusError as error:
        return TemplateInput(problems=[str(error)])
    return TemplateInput(templates, [], template_caveats(templates))


def build_comparison_set(name: str, templates: Sequence[ComparisonTemplate], number_formats: Sequence[str],
                         chat_template: bool = True) -> ComparisonSet:
    """The paper's design (references 10-1000, ratios 1.05-3, both positions) with ``templates`` as its
    prompts, ready to store as ``name`` for ``magdash behave --comparisons NAME``. The paper's set's
    name is refused for any other design (``magdash behave`` without ``--comparisons`` runs that name).

    Args:
        name: the set's name in the store.
        templates: the prompts (:func:`read_template_upload`).
        number_formats: how the numbers are written (names in :data:`magdash.stimuli.NUMBER_FORMATS`).
        chat_template: wrap each question in an instruct model's chat template.
    """
    comparisons = ComparisonSet(name=name.strip(), templates=tuple(templates), number_formats=tuple(number_formats),
                                chat_template=chat_template)
    if comparisons.name == PAPER_COMPARISONS_NAME and comparisons.content_hash != paper_comparisons().content_hash:
        raise StimulusError(f"the name {PAPER_COMPARISONS_NAME!r} belongs to the paper's design: choose another name")
    return comparisons


MAGNITUDE_MODES = ("paper", "list", "range")


def magnitudes_from_editor(mode: str, *, text: str = "", first: int = 1, last: int = 100, step: int = 1) -> list[int]:
    """The magnitude set of the editor: the paper's 26, a list/range spec, or first..last by step."""
    if mode == "paper":
        return parse_magnitudes(PAPER_SET_NAME)
    if mode == "list":
        return parse_magnitudes(text)
    if mode == "range":
        if step < 1:
            raise StimulusError(f"step {step} must be at least 1")
        if last < first:
            raise StimulusError(f"the range runs backwards ({first} to {last}): swap the two ends")
        if (last - first) // step > 1_000_000:
            raise StimulusError("the range holds over a million numbers: narrow it or take a larger step")
        return validate_magnitudes(range(first, last + 1, step))
    raise StimulusError(f"unknown magnitude mode {mode!r}: use one of {', '.join(MAGNITUDE_MODES)}")


def build_stimulus_set(name: str, carriers: Sequence[str], magnitudes: Sequence[int], store: Store | None = None,
                       number_format: str = DEFAULT_NUMBER_FORMAT) -> StimulusSet:
    """A stimulus set ready to save, its numbers written in ``number_format``; a name already
    stored with other content is refused, and so is the name of the paper's set for anything but
    the paper's stimuli in digits (the Extract page and the first-run protocol rely on that name)
    and a second name for sentences already stored (the same carriers and magnitudes in another
    format are other sentences: a set of their own)."""
    stimuli = StimulusSet(name.strip(), tuple(carriers), tuple(magnitudes), number_format)
    check_reserved_name(stimuli)
    taken = store is not None and stimuli.name in store.stimulus_set_names()
    if store is not None and taken and store.stimulus_set(stimuli.name).content_hash != stimuli.content_hash:
        raise StimulusError(f"a different stimulus set named {stimuli.name!r} is already stored: choose another name")
    if store is not None and not taken and (stored := store.known_as(stimuli).name) != stimuli.name:
        raise StimulusError(f"these sentences are already stored as the set {stored!r}: choose that set instead")
    return stimuli


def preview_set(carriers: Sequence[str], magnitudes: Sequence[int],
                number_format: str = DEFAULT_NUMBER_FORMAT) -> StimulusSet:
    """The sentences to preview, checked like a set to save but under no name rule (never stored)."""
    return StimulusSet("preview", tuple(carriers), tuple(magnitudes), number_format)


def format_label(number_format: str) -> str:
    """A number format as the page offers it: its name and how 7, 23 and 1000 read in it."""
    examples = ", ".join(write_number(n, number_format, largest=1000) for n in (7, 23, 1000))
    return f"{number_format} ({examples})"


def preview_items(stimuli: StimulusSet, limit: int = 60):
    """The items of a tokenization preview: every carrier with a spread of magnitudes."""
    magnitudes = list(stimuli.magnitudes)
    if len(stimuli.items) <= limit:
        return list(stimuli.items)
    per_carrier = max(1, limit // len(stimuli.carriers))
    picks = sorted({magnitudes[round(i * (len(magnitudes) - 1) / max(per_carrier - 1, 1))] for i in range(per_carrier)})
    chosen = set(picks)
    return [item for item in stimuli.items if item.magnitude in chosen]


def preview_note(stimuli: StimulusSet, items) -> str | None:
    """Which numbers a shortened preview shows (None when it shows them all)."""
    shown = sorted({item.magnitude for item in items})
    if len(shown) == len(stimuli.magnitudes):
        return None
    return (f"Showing {len(shown)} of the {len(stimuli.magnitudes)} numbers, spread over the range: "
            + ", ".join(map(str, shown)))


def what_to_fix(carriers_ok: bool, magnitudes_ok: bool) -> str | None:
    """What stands between the inputs and a preview: the carriers, the magnitudes or both."""
    broken = [name for name, ok in (("carriers", carriers_ok), ("magnitudes", magnitudes_ok)) if not ok]
    return f"Fix the {' and '.join(broken)} above to preview their tokens." if broken else None


def tokenization_preview(tokenizer, items, position: str = DEFAULT_POSITION, sequence_start: str = "tokenizer") -> pd.DataFrame:
    """Which tokens each number maps to for a model's fast tokenizer (or a loaded model).

    Columns: magnitude, carrier, sentence, number_tokens (every token overlapping the number,
    joined by " + "), n_number_tokens, kept (the token(s) whose vector is stored at
    ``position``), tokens (the whole sequence as the model sees it, a prepended BOS included,
    " | "-separated), first_position (whether the kept token is at position 0, the attention
    sink). ``sequence_start`` is the model's rule (:func:`magdash.sources.base.sequence_start_rule`;
    a loaded model brings its own).
    """
    from magdash.extraction import locate_numbers

    if position not in POSITIONS:
        raise StimulusError(f"unknown token position {position!r}: use one of {', '.join(POSITIONS)}")
    token_ids, overlapping = locate_numbers(tokenizer, items, "mean", sequence_start)
    _, kept = locate_numbers(tokenizer, items, position, sequence_start)
    tokenizer = getattr(tokenizer, "tokenizer", tokenizer)
    rows = []
    for item, ids, overlap, keep in zip(items, token_ids, overlapping, kept, strict=True):
        pieces = tokenizer.convert_ids_to_tokens(ids)
        rows.append(
            {
                "magnitude": item.magnitude,
                "carrier": item.carrier_index,  # from 0, as the warnings and --exclude-carrier count
                "sentence": item.sentence,
                "number_tokens": " + ".join(pieces[i] for i in overlap),
                "n_number_tokens": len(overlap),
                "kept": " + ".join(pieces[i] for i in keep),
                "tokens": " | ".join(pieces),
                "first_position": 0 in keep,
            }
        )
    return pd.DataFrame(rows)


def sequence_start_note(sequence_start: str, tokenizer=None) -> str:
    """What the model puts before each sentence, in words (the preview's caption)."""
    if sequence_start == "tokenizer":
        return "The tokenizer puts its own special token(s) before every sentence: no number is at position 0."
    if sequence_start.startswith("bos:"):
        token_id = int(sequence_start.removeprefix("bos:"))
        shown = f" {tokenizer.convert_ids_to_tokens(token_id)}" if tokenizer is not None else ""
        return (f"The tokenizer adds no BOS token: magdash puts the model's BOS{shown} (id {token_id}) before every "
                "sentence, so no number is at position 0 (the attention sink); it is part of the model's identity.")
    return ("The model has no BOS token: a number at the start of a sentence would be at position 0, the "
            "attention sink. Extraction refuses such carriers unless allowed (allow_number_first=True).")


def split_summary(preview: pd.DataFrame) -> str:
    """One sentence on how numbers split into tokens, e.g. "4 of 26 numbers span several tokens"."""
    if preview.empty:
        return "nothing to preview"
    per_number = preview.drop_duplicates("magnitude")
    several = per_number[per_number["n_number_tokens"] > 1]
    if several.empty:
        return f"every one of the {len(per_number)} numbers shown is a single token"
    examples = ", ".join(f"{int(r.magnitude)} → {r.number_tokens}"  # pyright: ignore[reportArgumentType] - pandas-stubs: itertuples fields are Scalar
                         for r in several.head(3).itertuples())
    return f"{len(several)} of {len(per_number)} numbers shown span several tokens (e.g. {examples})"


def tokenizer_specs(records: Iterable[ModelRecord], cached: Sequence[str]) -> list[str]:
    """Model specs whose tokenizer can be previewed: built-ins, the stored models whose files are
    at hand (:func:`magdash.sources.spec_for_source`), the Hugging Face cache's models."""
    from magdash.sources import spec_for_source
    from magdash.sources.builtin import BUILTIN_MODELS

    specs = list(BUILTIN_MODELS)
    for record in records:
        spec = spec_for_source(record.source)
        if spec is not None and spec not in specs:
            specs.append(spec)
    specs += [repo for repo in cached if repo not in specs]
    return specs
