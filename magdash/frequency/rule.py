"""What counts as a number in a corpus: the paper's integer rule for RE2, and English number words.

The paper's rule (Cacioli, arXiv 2604.04469, Appendix E): Python ``re`` with

    (?<![.\\d])(\\b\\d{1,4}\\b)(?![.\\d])

over each document; every match is converted with ``int()`` and values 1..1000 are kept.
DuckDB runs RE2, which has no look-around, so the counter uses an equivalent form.

**Equivalence.** Let W be Python's ``\\w`` for str patterns (Unicode letters, digits and numeric
characters, and ``_``) and R = W ∪ {"."}. Claim: the paper's pattern matches the substring
s[i:j] exactly when s[i:j] is a *maximal run* of characters of R (i = 0 or s[i-1] ∉ R, and
j = len(s) or s[j] ∉ R) and s[i:j] is 1 to 4 decimal digits (``\\d{1,4}``).

(⇒) A match has s[i:j] ∈ \\d{1,4}, so every character of it is in \\d ⊂ W ⊂ R. ``\\b`` at i with
s[i] ∈ W means i = 0 or s[i-1] ∉ W; the look-behind means i = 0 or s[i-1] ∉ {"."} ∪ \\d. Since
\\d ⊂ W, together: i = 0 or s[i-1] ∉ W ∪ {"."} = R. The same argument with ``\\b`` and the
look-ahead at j gives j = len(s) or s[j] ∉ R, so s[i:j] is a maximal run.
(⇐) If s[i:j] is a maximal run and in \\d{1,4}, then s[i-1] (if any) is not ".", not a digit
(digits are in W) and not in W, so the look-behind and ``\\b`` hold at i; likewise at j; and
``\\d{1,4}`` matches s[i:j].
``finditer`` returns all of them: maximal runs are disjoint, so matches never overlap, and at
the start of a qualifying run the greedy ``\\d{1,4}`` backtracks to the one length (the whole
run) at which ``\\b`` holds. ∎

So the counter extracts, with RE2, every maximal run of R that contains a decimal digit
(:data:`DIGIT_RUN`; RE2's leftmost-first search starts it at the run's first character, since
the character before is not in R, and the greedy classes carry it to the run's end), keeps the
runs that are 1-4 decimal digits (:data:`DIGIT_TOKEN`) and converts them with Python's ``int``.

**Unicode.** In RE2, W is ``[\\p{L}\\p{N}_]`` and ``\\d`` is ``\\p{Nd}``. Checked over every code
point (tests/test_frequency.py), these equal Python's ``\\w`` and ``\\d`` on every character
assigned in the running Python's Unicode database; they differ only on code points unassigned
there, which RE2's newer tables may already know. The counter therefore follows the paper's
code on Unicode text too: a word character of any script glues to a number ("é5" is not a
number), and decimal digits of other scripts count ("٣" is 3, as ``int("٣")`` is). In the ASCII
domain the two are equal without qualification.

**Options.** ``sentence_final``: the paper's look-ahead rejects "in 2020." because of the full
stop; with this option a run that is 1-4 digits followed by one "." ending the run
(:data:`DIGIT_TOKEN_SENTENCE_FINAL`) also counts: "in 2020." and "(see 5.)" count; "3.5",
"2020..." and "1.a" do not. A numbered-list marker such as "1. Introduction" counts too; the
rule cannot tell it from a sentence end.
``words``: English number words, see :func:`number_word_values`.
"""

from __future__ import annotations

import re

PAPER_PATTERN = r"(?<![.\d])(\b\d{1,4}\b)(?![.\d])"

# Python's \w for str patterns, in RE2 (see the module docstring for the check).
WORD_CHARS = r"\p{L}\p{N}_"
# Every maximal run of [\w.] that contains a decimal digit.
DIGIT_RUN = rf"[{WORD_CHARS}.]*\p{{Nd}}[{WORD_CHARS}.]*"
DIGIT_TOKEN = r"\p{Nd}{1,4}"
DIGIT_TOKEN_SENTENCE_FINAL = r"\p{Nd}{1,4}\.?"
# Python's str.isspace() set: ASCII \t-\r, the information separators, NEL and the Z category.
BLANK_LINE = r"[\t-\r\x1c-\x20\x{85}\pZ]*"
# A newline followed by one or more blank lines: the boundary between two paragraphs.
PARAGRAPH_BREAK = r"\n(?:[\t\x0b\x0c\r\x1c-\x20\x{85}\pZ]*\n)+"

UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4,
    "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
}
TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}
SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_KNOWN_WORDS = frozenset(UNITS) | frozenset(TEENS) | frozenset(TENS) | frozenset(SCALES) | {"hundred", "and", "a"}

_ORDINAL_STEMS = [
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
    "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
    "eighteenth", "nineteenth", "twentieth", "thirtieth", "fortieth", "fiftieth", "sixtieth",
    "seventieth", "eightieth", "ninetieth", "hundredth", "thousandth", "millionth", "billionth",
]
# A number word joined by a hyphen to one of these is an ordinal or a fraction, not a cardinal:
# "twenty-first", "one-third", "two-halves".
ORDINALS_AND_FRACTIONS = frozenset(_ORDINAL_STEMS + [stem + "s" for stem in _ORDINAL_STEMS]) | {
    "half", "halves", "quarter", "quarters",
}

# Longest alternatives first: RE2's leftmost-first alternation then prefers "eighteen" to "eight".
_NUMBER_WORD = "(?:" + "|".join(
    sorted([*UNITS, *TEENS, *TENS, "hundred", *SCALES], key=len, reverse=True)
) + ")"
_JOINER = r"(?:\s+and\s+|\s+|-)"
# A run of number words, with whatever word characters are glued to either end (so that
# "someone", "tenth" and "ones" come out whole and can be rejected) and any hyphenated words
# that follow ("thirty-one-year-old"). Matched case-insensitively.
NUMBER_WORDS = (
    rf"[{WORD_CHARS}]*(?:a\s+(?:hundred|thousand|million|billion|trillion)|{_NUMBER_WORD})"
    rf"(?:{_JOINER}{_NUMBER_WORD})*[{WORD_CHARS}]*(?:-[{WORD_CHARS}]+)*"
)

_WHITESPACE = re.compile(r"\s+")


def number_word_values(phrase: str) -> list[int]:
    """The numbers written in a run of English number words (one :data:`NUMBER_WORDS` match).

    Grammar (case-insensitive; words separated by spaces or hyphens):

    - below 100: ``one`` .. ``nineteen``, ``twenty`` .. ``ninety``, a tens word followed by a
      unit (``twenty-one``, ``twenty one``); ``zero`` is 0;
    - hundreds: ``a hundred``, ``X hundred`` with X = 1..99 (``nineteen hundred`` is 1900),
      optionally followed by ``[and] Y`` with Y = 1..99 (``one hundred and five`` = 105);
    - scales: ``a thousand``, ``G thousand [[and] H]``, and likewise million, billion, trillion,
      in decreasing order (``two thousand twenty`` = 2020).

    A run holding several numbers is read greedily from the left, longest number first:
    ``one two three`` gives [1, 2, 3], ``one and two`` gives [1, 2]. Words that make no number
    on their own (a bare ``hundred``, ``and``) are skipped.

    The whole run is rejected (no numbers) when a word character is glued to a number word
    (``someone``, ``tenth``, ``ones``), or when the first hyphenated word after the numbers is
    an ordinal or a fraction (``twenty-first``, ``one-third``). Other hyphenated words end the
    number: ``thirty-one-year-old`` is 31, as "31-year-old" is 31 under the digit rule.

    Limits, by design: ``one`` is counted even as a pronoun ("no one"), and an expression with a
    fraction ("one and a half") counts its whole part.
    """
    tokens: list[str] = []
    words = _WHITESPACE.split(phrase.strip().lower())
    for word_index, word in enumerate(words):
        parts = word.split("-")
        for part_index, part in enumerate(parts):
            if part in _KNOWN_WORDS:
                tokens.append(part)
                continue
            hyphenated_tail = word_index == len(words) - 1 and part_index > 0
            if hyphenated_tail and part and part not in ORDINALS_AND_FRACTIONS:
                break
            return []
    values = []
    position = 0
    while position < len(tokens):
        parsed = _number(tokens, position)
        if parsed is None:
            position += 1
            continue
        value, position = parsed
        values.append(value)
    return values


def _below_hundred(tokens: list[str], i: int) -> tuple[int, int] | None:
    word = tokens[i] if i < len(tokens) else None
    if word in TENS:
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if following in UNITS and UNITS[following] > 0:
            return TENS[word] + UNITS[following], i + 2
        return TENS[word], i + 1
    if word in TEENS:
        return TEENS[word], i + 1
    if word in UNITS:
        return UNITS[word], i + 1
    return None


def _below_ten_thousand(tokens: list[str], i: int) -> tuple[int, int] | None:
    """``[X] hundred [[and] Y]`` or a number below 100."""
    if tokens[i : i + 2] == ["a", "hundred"]:
        multiplier, j = 1, i + 2
    else:
        small = _below_hundred(tokens, i)
        if small is None:
            return None
        multiplier, j = small
        if not (j < len(tokens) and tokens[j] == "hundred" and multiplier > 0):
            return small
        j += 1
    value = multiplier * 100
    k = j + 1 if j < len(tokens) and tokens[j] == "and" else j
    rest = _below_hundred(tokens, k)
    if rest is not None and rest[0] > 0:
        value, j = value + rest[0], rest[1]
    return value, j


def _number(tokens: list[str], i: int) -> tuple[int, int] | None:
    if tokens[i] == "a" and i + 1 < len(tokens) and tokens[i + 1] in SCALES:
        group, j = 1, i + 1
    else:
        first = _below_ten_thousand(tokens, i)
        if first is None:
            return None
        group, j = first
    total = 0
    previous_scale = float("inf")
    while j < len(tokens) and tokens[j] in SCALES and SCALES[tokens[j]] < previous_scale and group > 0:
        previous_scale = SCALES[tokens[j]]
        total += group * SCALES[tokens[j]]
        j += 1
        k = j + 1 if j < len(tokens) and tokens[j] == "and" else j
        rest = _below_ten_thousand(tokens, k) if k < len(tokens) else None
        if rest is None:
            group = 0
            break
        group, j = rest
    return total + group, j
