import pytest

from magdash.errors import StimulusError
from magdash.stimuli import (
    PAPER_MAGNITUDES,
    StimulusSet,
    carrier_problems,
    make_item,
    paper_stimuli,
    parse_carrier_text,
    parse_magnitudes,
    read_carrier_file,
    token_indices_for_span,
)


def test_paper_set_has_26_magnitudes_and_5_carriers():
    stimuli = paper_stimuli()
    assert len(stimuli.magnitudes) == 26
    assert stimuli.magnitudes[:10] == tuple(range(1, 11))
    assert stimuli.magnitudes[-1] == 1000
    assert len(stimuli.items) == 130


def test_item_span_points_at_the_number():
    item = make_item(347, 1, "There are {n} items.")
    assert item.sentence == "There are 347 items."
    assert item.sentence[item.start:item.end] == "347"
    first = make_item(1000, 2, "{n} was the value.")
    assert (first.start, first.end) == (0, 4)


def test_item_keys_are_content_addresses():
    a = make_item(5, 0, "There are {n} items.")
    b = make_item(5, 3, "There are {n} items.")
    c = make_item(6, 0, "There are {n} items.")
    assert a.key == b.key
    assert a.key != c.key


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("1-5", [1, 2, 3, 4, 5]),
        ("1,2,5,10", [1, 2, 5, 10]),
        ("10, 2 ,2", [2, 10]),
        ("1-3,100", [1, 2, 3, 100]),
        ("paper", list(PAPER_MAGNITUDES)),
        ("PAPER,2000", list(PAPER_MAGNITUDES) + [2000]),
    ],
)
def test_parse_magnitudes(spec, expected):
    assert parse_magnitudes(spec) == expected


def test_parse_magnitudes_1_to_1000():
    assert parse_magnitudes("1-1000") == list(range(1, 1001))


@pytest.mark.parametrize("spec", ["", "0", "-3", "5-1", "a-b", "1.5", "1,,2", "0-10"])
def test_bad_magnitude_specs_say_what_to_fix(spec):
    with pytest.raises(StimulusError) as error:
        parse_magnitudes(spec)
    assert len(str(error.value)) > 10


def test_carrier_problems_are_listed_per_line():
    problems = carrier_problems(["There are {n} items.", "no placeholder", "{n} and {n}", "There are {n} items.", ""])
    joined = " | ".join(problems)
    assert "line 2 has no {n}" in joined
    assert "line 3 has 2 {n}" in joined
    assert "line 4 repeats line 1" in joined
    assert "line 5 is empty" in joined


def test_parse_carrier_text_ignores_trailing_blank_lines():
    assert parse_carrier_text("A {n} b.\r\nC {n} d.\n\n") == ["A {n} b.", "C {n} d."]


def test_read_carrier_file_rejects_non_utf8(tmp_path):
    path = tmp_path / "carriers.txt"
    path.write_bytes("Il y a {n} \xe9l\xe9ments.".encode("latin-1"))
    with pytest.raises(StimulusError, match="not UTF-8"):
        read_carrier_file(str(path))


def test_read_carrier_file_missing(tmp_path):
    with pytest.raises(StimulusError, match="cannot read"):
        read_carrier_file(str(tmp_path / "absent.txt"))


def test_stimulus_set_validates():
    with pytest.raises(StimulusError):
        StimulusSet("x", ("no placeholder",), (1, 2))
    with pytest.raises(StimulusError):
        StimulusSet("x", ("A {n}.",), (0, 2))


OFFSETS_LLAMA3_1000 = [(0, 0), (0, 5), (6, 9), (10, 13), (13, 14), (15, 20), (20, 21)]


def test_last_token_of_a_split_number():
    assert token_indices_for_span(OFFSETS_LLAMA3_1000, 10, 14, "last") == [4]
    assert token_indices_for_span(OFFSETS_LLAMA3_1000, 10, 14, "first") == [3]
    assert token_indices_for_span(OFFSETS_LLAMA3_1000, 10, 14, "mean") == [3, 4]


def test_padding_and_special_tokens_never_match():
    left_padded = [(0, 0), (0, 0), (0, 0)] + OFFSETS_LLAMA3_1000
    assert token_indices_for_span(left_padded, 10, 14) == [7]
    number_first = [(0, 0), (0, 3), (3, 4), (5, 8)]
    assert token_indices_for_span(number_first, 0, 4) == [2]


def test_wordpiece_leading_space_token_is_not_the_number():
    # BERT-like "34", "##7" and a sentencepiece-like lone space token before the digits.
    offsets = [(0, 0), (0, 5), (6, 9), (9, 10), (10, 12), (12, 13), (14, 19)]
    assert token_indices_for_span(offsets, 10, 13, "last") == [5]
    assert token_indices_for_span(offsets, 10, 13, "mean") == [4, 5]


def test_no_token_covers_the_number():
    with pytest.raises(StimulusError, match="no token covers"):
        token_indices_for_span([(0, 0), (0, 3)], 10, 12)
    with pytest.raises(StimulusError, match="unknown token position"):
        token_indices_for_span(OFFSETS_LLAMA3_1000, 10, 14, "middle")
