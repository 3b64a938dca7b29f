"""How a model's tokenizer cuts the numbers of a stimulus set: token counts and kept tokens.

SmolLM2 and Gemma 3 tokenize every digit separately (as Mistral does in Cacioli 2026, arXiv
2604.04469): "1000" is ``1 0 0 0``, so the kept (last) token of 10, 20, ..., 1000 is the token
``0`` and V at that token mixes magnitude with the last digit's identity and the number of
digits. These facts are what the analysis needs to separate them
(:mod:`magdash.variability.tokenization_fits`):

- per item (:func:`number_tokens`, :func:`tokenize_numbers`): how many tokens overlap the
  number's character span (:func:`magdash.stimuli.token_indices_for_span`'s rule, the same one
  extraction keeps tokens by), which token the position rule keeps (its id and the characters
  it covers), and how long the number is in characters and in decimal digits;
- per magnitude (:func:`per_magnitude`): the same facts agreed over the carriers;
- per model (:func:`digit_splitting`): whether its tokenizer splits digits, from the token
  counts of 1..1000 written in digits.

A separate module rather than part of :mod:`magdash.stimuli`: stimuli are text and exist before
any model, these facts need a tokenizer. Pure functions; the tokenizer is any Hugging Face
*fast* tokenizer (it must return offsets), used through its call alone, so nothing here imports
transformers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from magdash.errors import StimulusError
from magdash.stimuli import DEFAULT_POSITION, POSITIONS, StimulusItem, make_item, token_indices_for_span

SPLITTING_CARRIER = "There are {n} items."
"""The carrier :func:`digit_splitting` writes numbers into: after a space, as in most carriers
(byte-level BPE tokenizes " 1000" and a sentence-initial "1000" differently)."""
SPLITTING_MAGNITUDES = range(1, 1001)
_TOKENIZE_BATCH = 4096


@dataclass(frozen=True)
class NumberTokens:
    """How one item's number was tokenized.

    - ``n_tokens``: tokens overlapping the number's character span (every token ``mean``
      averages);
    - ``kept_ids``: the tokens whose vectors the position rule stores: the last overlapping one
      (``last``), the first (``first``) or all of them (``mean``);
    - ``kept_id``, ``kept_text``: the one token that stands for the item's identity: the kept
      token under ``last`` and ``first``; under ``mean``, which keeps no single token, the last
      overlapping one (the token ``last`` would keep). ``kept_text`` is the part of the written
      number the token covers (without the space a byte-level BPE token carries before a word);
    - ``span_texts``: the part of the number each overlapping token covers, in order
      ("1", "0", "0", "0"; "1", ",", "0", "0", "0");
    - ``n_chars``: characters of the written number (the span's length: "1,000" is 5);
    - ``n_digits``: decimal digits of the magnitude, whatever the format (1000 has 4).
    """

    magnitude: int
    carrier_index: int
    position: str
    n_tokens: int
    kept_ids: tuple[int, ...]
    kept_id: int
    kept_text: str
    span_texts: tuple[str, ...]
    n_chars: int
    n_digits: int


def number_tokens(
    item: StimulusItem,
    token_ids: Sequence[int],
    offsets: Sequence[tuple[int, int]],
    position: str = DEFAULT_POSITION,
) -> NumberTokens:
    """The tokenization facts of one item from its encoding.

    Args:
        item: the stimulus (its sentence and the number's span ``[start, end)``).
        token_ids: the sentence's token ids as the model reads them (special tokens included).
        offsets: each token's character span in the sentence; special tokens ``(0, 0)``.
        position: the rule that keeps the number's token(s): one of :data:`POSITIONS`.

    A :class:`StimulusError` when no token covers the number, or ids and offsets differ in length.
    """
    if len(token_ids) != len(offsets):
        raise StimulusError(f"{len(token_ids)} token ids but {len(offsets)} offsets: give one offset per token")
    overlapping = token_indices_for_span(offsets, item.start, item.end, "mean")
    kept = token_indices_for_span(offsets, item.start, item.end, position)
    identity = kept[-1]

    def covered(index: int) -> str:
        return item.sentence[max(offsets[index][0], item.start):min(offsets[index][1], item.end)]

    return NumberTokens(
        magnitude=item.magnitude,
        carrier_index=item.carrier_index,
        position=position,
        n_tokens=len(overlapping),
        kept_ids=tuple(int(token_ids[index]) for index in kept),
        kept_id=int(token_ids[identity]),
        kept_text=covered(identity),
        span_texts=tuple(covered(index) for index in overlapping),
        n_chars=item.end - item.start,
        n_digits=digit_count(item.magnitude),
    )


def digit_count(magnitude: float) -> int:
    """Decimal digits of the magnitude's whole part, however it is written (1000 has 4; a
    magnitude below 1 has the one digit of its "0").

    Args:
        magnitude: the number.
    """
    return len(str(int(abs(magnitude))))


def tokenize_numbers(
    tokenizer, items: Sequence[StimulusItem], position: str = DEFAULT_POSITION,
    encoded: Sequence[tuple[Sequence[int], Sequence[tuple[int, int]]]] | None = None,
) -> list[NumberTokens]:
    """:func:`number_tokens` of every item, encoded by ``tokenizer`` as extraction encodes them.

    Args:
        tokenizer: a Hugging Face fast tokenizer (called with ``return_offsets_mapping=True`` and
            ``add_special_tokens=True``, as :func:`magdash.extraction.tokenize_texts` calls it; a BOS
            token magdash prepends itself has the empty span and changes none of these facts).
        items: the stimuli, e.g. ``StimulusSet.items``.
        position: one of :data:`POSITIONS`.
        encoded: each item's (token ids, offsets) where the caller has them (an extraction's own
            encoding, :func:`magdash.extraction.tokenize_texts`: a large set takes seconds to
            tokenize); None: ``tokenizer`` encodes them.
    """
    if position not in POSITIONS:
        raise StimulusError(f"unknown token position {position!r}: use one of {', '.join(POSITIONS)}")
    if encoded is not None:
        return [number_tokens(item, ids, offsets, position) for item, (ids, offsets) in zip(items, encoded, strict=True)]
    facts: list[NumberTokens] = []
    for first in range(0, len(items), _TOKENIZE_BATCH):
        batch = items[first:first + _TOKENIZE_BATCH]
        encoded = _encode(tokenizer, [item.sentence for item in batch])
        for item, ids, offsets in zip(batch, encoded["input_ids"], encoded["offset_mapping"], strict=True):
            facts.append(number_tokens(item, ids, [tuple(span) for span in offsets], position))
    return facts


def _encode(tokenizer, texts: list[str]):
    try:
        return tokenizer(texts, return_offsets_mapping=True, add_special_tokens=True)
    except NotImplementedError:  # a slow (Python) tokenizer has no offsets
        raise StimulusError(
            "this tokenizer gives no character offsets (not a 'fast' tokenizer): magdash needs them to find "
            "the number's tokens"
        ) from None


@dataclass(frozen=True)
class MagnitudeTokens:
    """One magnitude's tokenization, agreed over its carriers.

    ``n_tokens``, ``kept_id``, ``kept_text`` and ``n_chars`` are the most common over the
    carriers (a tie goes to the fewer tokens, then the smaller id); ``uniform`` is False where
    carriers disagree (e.g. a byte-level BPE tokenizing a sentence-initial "1000" unlike " 1000",
    or "Seven" and "seven" in number words).
    """

    magnitude: int
    n_tokens: int
    kept_id: int
    kept_text: str
    n_chars: int
    n_digits: int
    uniform: bool


def per_magnitude(facts: Sequence[NumberTokens]) -> list[MagnitudeTokens]:
    """The facts of every magnitude in ``facts`` (items of one set), in increasing magnitude.

    The token count of each magnitude is the stratum of
    :func:`magdash.variability.tokenization_fits.strata_alphas`; its ``kept_id`` the identity
    covariate of :func:`magdash.variability.tokenization_fits.adjusted_alpha`.
    """
    by_magnitude: dict[int, list[NumberTokens]] = {}
    for fact in facts:
        by_magnitude.setdefault(fact.magnitude, []).append(fact)
    rows = []
    for magnitude in sorted(by_magnitude):
        group = by_magnitude[magnitude]
        n_tokens = _most_common([fact.n_tokens for fact in group])
        kept_id = _most_common([fact.kept_id for fact in group])
        rows.append(MagnitudeTokens(
            magnitude=magnitude,
            n_tokens=n_tokens,
            kept_id=kept_id,
            kept_text=_most_common([fact.kept_text for fact in group if fact.kept_id == kept_id]),
            n_chars=_most_common([fact.n_chars for fact in group]),
            n_digits=group[0].n_digits,
            uniform=len({(fact.n_tokens, fact.kept_id) for fact in group}) == 1,
        ))
    return rows


def _most_common(values: list):
    """The most frequent value; ties go to the smallest."""
    counts = Counter(values)
    top = max(counts.values())
    return min(value for value, count in counts.items() if count == top)


SPLITS_DIGITS = ("yes", "partly", "no")


@dataclass(frozen=True)
class DigitSplitting:
    """Whether a tokenizer splits numbers written in digits, from 1..1000 by default.

    - ``rule``: ``per-digit`` (every digit its own token; ``splits_digits`` "yes"), ``whole``
      (every number one token; "no"), ``chunks`` (runs of up to ``chunk`` digits, cut from the
      left as Llama 3's "1000" = "100" + "0", or from the right; "partly"), or ``vocabulary``
      (no fixed rule: the vocabulary's merges decide, as in BERT's WordPiece; "partly");
    - ``chunk``: the most digits any one token holds;
    - ``tokens_by_digits``: for each digit count, the fewest and most tokens a number had;
    - ``share_whole``: the share of the multi-digit numbers that are one token;
    - ``example``: the largest number's tokens, e.g. "1000 = 1|0|0|0";
    - ``description``: one line saying all that.
    """

    splits_digits: str
    rule: str
    chunk: int
    tokens_by_digits: dict[int, tuple[int, int]]
    share_whole: float
    example: str
    description: str


def digit_splitting(
    tokenizer, magnitudes: Sequence[int] = SPLITTING_MAGNITUDES, carrier: str = SPLITTING_CARRIER
) -> DigitSplitting:
    """How ``tokenizer`` splits numbers written in digits (:class:`DigitSplitting`).

    Args:
        tokenizer: a Hugging Face fast tokenizer.
        magnitudes: the numbers looked at (1..1000 by default); at least one with two digits.
        carrier: the sentence each number is written into (one ``{n}``).
    """
    numbers = sorted({int(magnitude) for magnitude in magnitudes})
    if not numbers or len(str(numbers[-1])) < 2:
        raise StimulusError("give magnitudes with at least one number of two digits or more to see how digits split")
    items = [make_item(magnitude, 0, carrier) for magnitude in numbers]
    encoded = _encode(tokenizer, [item.sentence for item in items])
    pieces = []  # per number: the digits each overlapping token covers
    for item, offsets in zip(items, encoded["offset_mapping"], strict=True):
        overlapping = token_indices_for_span([tuple(span) for span in offsets], item.start, item.end, "mean")
        pieces.append([min(offsets[i][1], item.end) - max(offsets[i][0], item.start) for i in overlapping])
    return _classify(numbers, pieces, items)


def _classify(numbers: list[int], pieces: list[list[int]], items: list[StimulusItem]) -> DigitSplitting:
    digits = [len(str(number)) for number in numbers]
    counts = [len(piece) for piece in pieces]
    chunk = max(max(piece) for piece in pieces)
    tokens_by_digits: dict[int, tuple[int, int]] = {}
    for n_digits, n_tokens in zip(digits, counts, strict=True):
        low, high = tokens_by_digits.get(n_digits, (n_tokens, n_tokens))
        tokens_by_digits[n_digits] = (min(low, n_tokens), max(high, n_tokens))
    multi = [count for count, n_digits in zip(counts, digits, strict=True) if n_digits > 1]
    share_whole = sum(count == 1 for count in multi) / len(multi)
    # the example is the largest of the numbers cut into the most tokens: how this tokenizer splits
    shown = max(range(len(numbers)), key=lambda index: (counts[index], numbers[index]))
    written = items[shown].sentence[items[shown].start:items[shown].end]
    example = f"{numbers[shown]} = " + "|".join(
        written[sum(pieces[shown][:i]):sum(pieces[shown][:i + 1])] for i in range(len(pieces[shown]))
    )
    top = max(digits)
    if all(count == n_digits for count, n_digits in zip(counts, digits, strict=True)):
        splits, rule = "yes", "per-digit"
        description = f"splits every digit into its own token ({example})"
    elif all(count == 1 for count in counts):
        splits, rule = "no", "whole"
        description = f"keeps every number up to {top} digits whole, one token each"
    elif chunk > 1 and (direction := _chunk_direction(pieces, digits, chunk)):
        splits, rule = "partly", "chunks"
        description = f"splits digits into runs of up to {chunk}, cut from the {direction} ({example})"
    else:
        splits, rule = "partly", "vocabulary"
        most = max(counts)
        description = (
            f"splits some numbers as its vocabulary has them: {share_whole:.0%} of the numbers of 2 to {top} "
            f"digits are one token, the others up to {most} tokens ({example})"
        )
    return DigitSplitting(splits, rule, chunk, tokens_by_digits, share_whole, example, description)


def _chunk_direction(pieces: list[list[int]], digits: list[int], chunk: int) -> str | None:
    """'left' or 'right' when every number is cut into runs of ``chunk`` digits from that end."""
    for direction in ("left", "right"):
        if all(piece == _runs(n_digits, chunk, direction) for piece, n_digits in zip(pieces, digits, strict=True)):
            return direction
    return None


def _runs(n_digits: int, chunk: int, direction: str) -> list[int]:
    full, rest = divmod(n_digits, chunk)
    runs = [chunk] * full
    if rest:
        runs = runs + [rest] if direction == "left" else [rest] + runs
    return runs
