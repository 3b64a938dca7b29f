"""Tokenization facts (magdash.tokenization): each item's token count and kept token, and
whether a tokenizer splits digits, on the tiny test tokenizers, MiniLM's WordPiece and (slow)
the built-in decoders' tokenizers."""

import pytest

from magdash.errors import StimulusError
from magdash.stimuli import (
    NUMBER_FORMAT_NAMES,
    PAPER_CARRIERS,
    PAPER_MAGNITUDES,
    StimulusSet,
    make_item,
    write_number,
)
from magdash.tokenization import (
    NumberTokens,
    digit_splitting,
    number_tokens,
    per_magnitude,
    tokenize_numbers,
)
from tests.support import build_tokenizer, require_builtin

ONE_TO_1000 = tuple(range(1, 1001))


def _fast_tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny word-level tokenizers: every digit its own token (1) and runs of up to 3 (3)."""
    tokenizers = {}
    for chunk in (1, 3):
        folder = tmp_path_factory.mktemp(f"digits{chunk}")
        build_tokenizer(folder, digit_chunk=chunk)
        tokenizers[chunk] = _fast_tokenizer(folder)
    return tokenizers


@pytest.fixture(scope="module")
def minilm():
    from magdash.sources import load_tokenizer

    require_builtin("minilm")
    return load_tokenizer("minilm")


def _check_spans(tokenizer, number_format: str, magnitudes) -> None:
    """Under every position rule the kept tokens overlap the written number, the overlapping
    tokens cover all of it but white space, and last/first keep the last/first of them.

    1..1000 in two carriers (the number inside a sentence and opening one), the paper's
    magnitudes in the paper's five carriers."""
    carriers = PAPER_CARRIERS if magnitudes == PAPER_MAGNITUDES else ("There are {n} items.", "{n} was the value.")
    stimuli = StimulusSet("s", carriers, magnitudes, number_format)
    encoded = tokenizer([item.sentence for item in stimuli.items], return_offsets_mapping=True)
    last_facts = tokenize_numbers(tokenizer, stimuli.items, "last")
    for item, ids, offsets, from_items in zip(
        stimuli.items, encoded["input_ids"], encoded["offset_mapping"], last_facts, strict=True
    ):
        written = item.sentence[item.start:item.end]
        assert written.lower() == write_number(item.magnitude, number_format, largest=magnitudes[-1]).lower()
        last, first, mean = (number_tokens(item, ids, offsets, position) for position in ("last", "first", "mean"))
        assert from_items == last
        for facts in (last, first, mean):
            assert (facts.magnitude, facts.carrier_index) == (item.magnitude, item.carrier_index)
            assert facts.n_tokens == len(facts.span_texts) >= 1
            assert all(facts.span_texts)  # each overlapping token covers part of the number
            assert "".join(facts.span_texts).replace(" ", "") == written.replace(" ", "")
            assert facts.n_chars == len(written)
            assert facts.n_digits == len(str(item.magnitude))
        assert len(last.kept_ids) == len(first.kept_ids) == 1
        assert last.kept_text == last.span_texts[-1] and first.kept_text == first.span_texts[0]
        assert len(mean.kept_ids) == mean.n_tokens
        assert mean.kept_ids[-1] == last.kept_ids[0] == mean.kept_id and mean.kept_ids[0] == first.kept_ids[0]


@pytest.mark.parametrize("number_format", NUMBER_FORMAT_NAMES)
@pytest.mark.parametrize("magnitudes", [ONE_TO_1000, PAPER_MAGNITUDES], ids=["1-1000", "paper"])
@pytest.mark.slow
def test_the_kept_tokens_cover_the_written_number_on_the_tiny_tokenizers(tiny, number_format, magnitudes):
    for tokenizer in tiny.values():
        _check_spans(tokenizer, number_format, magnitudes)


@pytest.mark.parametrize("number_format", NUMBER_FORMAT_NAMES)
@pytest.mark.parametrize("magnitudes", [ONE_TO_1000, PAPER_MAGNITUDES], ids=["1-1000", "paper"])
def test_the_kept_tokens_cover_the_written_number_on_minilm(minilm, number_format, magnitudes):
    _check_spans(minilm, number_format, magnitudes)


def test_token_counts_per_format_on_the_per_digit_tokenizer(tiny):
    def counts(number_format):
        stimuli = StimulusSet("s", ("There are {n} items.",), (7, 23, 150, 1000), number_format)
        return [(f.n_tokens, f.kept_text) for f in tokenize_numbers(tiny[1], stimuli.items)]

    assert counts("digits") == [(1, "7"), (2, "3"), (3, "0"), (4, "0")]
    assert counts("grouped") == [(1, "7"), (2, "3"), (3, "0"), (5, "0")]
    assert counts("padded") == [(4, "7"), (4, "3"), (4, "0"), (4, "0")]
    # The tiny tokenizer knows no number words: each word is one unknown token.
    assert counts("words") == [(1, "seven"), (1, "twenty-three"), (4, "fifty"), (2, "thousand")]


@pytest.mark.parametrize("number_format", ["digits", "words"])
@pytest.mark.parametrize("position", ["last", "first", "mean"])
def test_facts_from_an_extractions_encoding_equal_the_tokenizers_own(tiny, number_format, position):
    """An extraction hands its own encoding over (a BOS it prepends included): the facts must be
    those the tokenizer alone gives, which a store without them gets later."""
    from magdash.extraction import tokenize_texts

    stimuli = StimulusSet("s", PAPER_CARRIERS[:3], (1, 7, 23, 150, 1000), number_format)
    sentences = [item.sentence for item in stimuli.items]
    for tokenizer in tiny.values():
        alone = tokenize_numbers(tokenizer, stimuli.items, position)
        for start in ("tokenizer", "bos:1"):
            encoded = tokenize_texts(tokenizer, sentences, None, start)
            assert tokenize_numbers(None, stimuli.items, position, encoded) == alone  # no second encoding


def test_number_tokens_from_an_encoding():
    # "There are 1,000 items." as a BPE that splits digits and keeps a lone space token.
    item = make_item(1000, 2, "There are {n} items.", "grouped")
    offsets = [(0, 0), (0, 5), (5, 9), (9, 10), (10, 11), (11, 12), (12, 13), (13, 14), (14, 15), (15, 21)]
    ids = [1, 50, 51, 9, 20, 30, 19, 19, 19, 52]
    last = number_tokens(item, ids, offsets, "last")
    assert last == NumberTokens(
        magnitude=1000, carrier_index=2, position="last", n_tokens=5, kept_ids=(19,), kept_id=19, kept_text="0",
        span_texts=("1", ",", "0", "0", "0"), n_chars=5, n_digits=4,
    )
    first = number_tokens(item, ids, offsets, "first")
    assert (first.kept_ids, first.kept_id, first.kept_text) == ((20,), 20, "1")
    mean = number_tokens(item, ids, offsets, "mean")
    assert (mean.kept_ids, mean.kept_id, mean.kept_text) == ((20, 30, 19, 19, 19), 19, "0")
    with pytest.raises(StimulusError, match="one offset per token"):
        number_tokens(item, ids[:-1], offsets)
    with pytest.raises(StimulusError, match="no token covers"):
        number_tokens(item, ids[:3], offsets[:3])


def test_a_token_reaching_past_the_number_counts_only_its_part():
    item = make_item(7, 0, "There are {n} items.", "words")  # "seven" at 10..15
    facts = number_tokens(item, [5, 6, 7, 8], [(0, 5), (5, 9), (9, 15), (15, 21)])  # " seven" with its space
    assert facts.kept_text == "seven" and facts.span_texts == ("seven",)


def test_an_unknown_position_is_refused(tiny):
    with pytest.raises(StimulusError, match="unknown token position"):
        tokenize_numbers(tiny[1], [make_item(7, 0, "There are {n} items.")], "middle")


def _facts(magnitude, carrier_index, n_tokens, kept_id, kept_text):
    return NumberTokens(magnitude, carrier_index, "last", n_tokens, (kept_id,), kept_id, kept_text, (kept_text,),
                        len(kept_text), len(str(magnitude)))


def test_per_magnitude_takes_the_most_common_over_carriers():
    facts = [
        _facts(7, 0, 1, 40, "seven"), _facts(7, 1, 1, 40, "seven"), _facts(7, 2, 1, 41, "Seven"),
        _facts(1000, 0, 2, 50, "thousand"), _facts(1000, 1, 2, 50, "thousand"),
        _facts(15, 0, 2, 60, "5"), _facts(15, 1, 1, 61, "15"),  # a tie: the fewer tokens win
    ]
    rows = per_magnitude(facts)
    assert [row.magnitude for row in rows] == [7, 15, 1000]
    assert [(row.n_tokens, row.kept_id, row.kept_text, row.uniform) for row in rows] == [
        (1, 40, "seven", False), (1, 60, "5", False), (2, 50, "thousand", True),
    ]


def test_per_digit_splitting(tiny):
    splitting = digit_splitting(tiny[1])
    assert (splitting.splits_digits, splitting.rule, splitting.chunk) == ("yes", "per-digit", 1)
    assert splitting.tokens_by_digits == {1: (1, 1), 2: (2, 2), 3: (3, 3), 4: (4, 4)}
    assert splitting.share_whole == 0.0
    assert splitting.example == "1000 = 1|0|0|0"


def test_chunks_cut_from_the_left(tiny):
    splitting = digit_splitting(tiny[3])
    assert (splitting.splits_digits, splitting.rule, splitting.chunk) == ("partly", "chunks", 3)
    assert splitting.example == "1000 = 100|0"
    assert "from the left" in splitting.description
    assert splitting.tokens_by_digits == {1: (1, 1), 2: (1, 1), 3: (1, 1), 4: (2, 2)}
    assert splitting.share_whole == pytest.approx(990 / 991)  # of 10..1000 only 1000 is split


def _regex_tokenizer(pattern: str):
    """A fast tokenizer that cuts digits by ``pattern`` (vocabulary-free: offsets are all we read)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(vocab={"<unk>": 0}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
    ])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>")


def test_chunks_cut_from_the_right():
    splitting = digit_splitting(_regex_tokenizer(r"\d{1,3}(?=(?:\d{3})*(?!\d))"), [*range(1, 1001), 12_345, 99_996])
    assert (splitting.rule, splitting.chunk, splitting.example) == ("chunks", 3, "99996 = 99|996")
    assert "from the right" in splitting.description


def test_whole_numbers():
    splitting = digit_splitting(_regex_tokenizer(r"\d+"))
    assert (splitting.splits_digits, splitting.rule, splitting.chunk, splitting.share_whole) == ("no", "whole", 4, 1.0)


def test_wordpiece_splits_as_its_vocabulary_has_it(minilm):
    splitting = digit_splitting(minilm)
    assert (splitting.splits_digits, splitting.rule) == ("partly", "vocabulary")
    assert 0.0 < splitting.share_whole < 1.0
    assert splitting.tokens_by_digits[1] == (1, 1)
    assert splitting.tokens_by_digits[3][1] >= 2
    number, cut = splitting.example.split(" = ")  # a number it splits, shown with its pieces
    assert "|" in cut and cut.replace("|", "") == number


def test_splitting_needs_a_number_of_two_digits(tiny):
    with pytest.raises(StimulusError, match="two digits"):
        digit_splitting(tiny[1], range(1, 10))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2", "gemma3-270m"])
def test_the_decoders_split_every_digit_and_keep_the_whole_number(name):
    from magdash.sources import load_tokenizer

    require_builtin(name)
    tokenizer = load_tokenizer(name)
    splitting = digit_splitting(tokenizer)
    assert (splitting.splits_digits, splitting.rule, splitting.example) == ("yes", "per-digit", "1000 = 1|0|0|0")
    for number_format in NUMBER_FORMAT_NAMES:
        for magnitudes in (ONE_TO_1000, PAPER_MAGNITUDES):
            _check_spans(tokenizer, number_format, magnitudes)
    stimuli = StimulusSet("s", ("There are {n} items.",), (10, 20, 1000), "digits")
    facts = tokenize_numbers(tokenizer, stimuli.items)
    assert [(f.n_tokens, f.kept_text) for f in facts] == [(2, "0"), (2, "0"), (4, "0")]
    assert len({f.kept_id for f in facts}) == 1  # the same token "0" stands for 10, 20 and 1000
